/**
 * What a failed virsh call was, in the shape every KVM caller branches on: its stage (what the health
 * checker names), whether the object was missing, whether retrying can help, and whether the command may
 * have run. Classified from virsh's stderr. Plain functions: they travel with the serialized dynamic
 * providers (components/kvm/libvirt.ts says why).
 */
import { classify, ErrorClass } from "../shared/errors";

/** Stage of a failed call, as the health checker reports it. */
export type LibvirtStage = "key" | "tcp" | "host-key" | "ssh-auth" | "libvirt" | "timeout";

/** An Error with the facts callers branch on. Created by `libvirtError`; plain object fields, no class. */
export interface LibvirtError extends Error {
    stage: LibvirtStage;
    /** The object (domain, volume, pool) does not exist. */
    notFound: boolean;
    /** Worth retrying (connection trouble, timeouts) as opposed to an operator-fixable problem. */
    transient: boolean;
    /** `transient` or `permanent` (libvirt has no quota). */
    errorClass: ErrorClass;
    /** False when virsh provably never reached libvirtd (connect failed), so the command did not run. */
    mayHaveRun?: boolean;
}

/**
 * virsh commands that change nothing: safe to run again after a connection dropped mid-command. An
 * array, not a Set: Pulumi's closure serializer copies a Set's fields into a plain object, and `.has`
 * on it throws inside the dynamic provider (test/integration/serialized-errors.test.ts).
 */
const READ_ONLY_VIRSH: readonly string[] = [
    "domstate",
    "dominfo",
    "domblklist",
    "domifaddr",
    "dumpxml",
    "echo",
    "hostname",
    "list",
    "metadata",
    "net-dhcp-leases",
    "pool-info",
    "pool-refresh",
    "qemu-agent-command",
    "version",
    "vol-download",
    "vol-info",
    "vol-list",
    "vol-path",
    "vol-pool",
    "vol-dumpxml",
];

/**
 * True when a failed virsh call may be tried again: transient, and either it never reached libvirtd or
 * every command in it (a `;`-separated batch counts each) only reads. `metadata` with `--set` writes.
 */
export function virshRetryable(args: string[], e: unknown): boolean {
    const le = e as Partial<LibvirtError>;
    if (le?.errorClass !== "transient") return false;
    if (le.mayHaveRun === false) return true;
    const commands = args.length === 1 ? args[0].split(";").map((c) => c.trim()) : [args.join(" ")];
    return commands.every((c) => READ_ONLY_VIRSH.includes(c.split(/\s+/)[0]) && !/(^|\s)--(set|remove)\b/.test(c));
}

/** Classifies virsh's stderr into a stage and a hint the operator can act on. */
export function classifyVirshFailure(stderr: string): {
    stage: LibvirtStage;
    notFound: boolean;
    transient: boolean;
    hint: string;
} {
    const s = stderr;
    if (/HOST KEY VERIFICATION FAILED|host key .* was not accepted|differs from stored identity/i.test(s))
        return {
            stage: "host-key",
            notFound: false,
            transient: false,
            hint: "the host key is unknown or does not match `ssh.knownHosts`; add the host's key (ssh-keyscan -p PORT ADDRESS, then verify it) to knownHosts",
        };
    if (/error while opening private key|wrong passphrase|Failed to (read|import) (private )?key/i.test(s))
        return {
            stage: "key",
            notFound: false,
            transient: false,
            hint: "the private key could not be read; `ssh.privateKey` must be an unencrypted OpenSSH private key",
        };
    if (/failed to authenticate|Access denied|Permission denied \(publickey|authentication failed/i.test(s))
        return {
            stage: "ssh-auth",
            notFound: false,
            transient: false,
            hint: "the SSH server refused the key; add the public key to the user's authorized_keys on the host",
        };
    if (
        /XML error|XML document failed to validate|parser error|Extra content at the end of the document|unsupported configuration/i.test(
            s,
        )
    )
        return {
            stage: "libvirt",
            notFound: false,
            transient: false,
            hint: "libvirt refused the XML egress generated for this host: check the entry's settings (firmware, machine type, bridge/network) against what this host's libvirt supports",
        };
    if (
        /unable to connect to server|Connection refused|No route to host|Network is unreachable|Connection timed out|Name or service not known|Temporary failure in name resolution|Socket error|handshake failed/i.test(
            s,
        )
    )
        return {
            stage: "tcp",
            notFound: false,
            transient: true,
            hint: "the host's SSH port does not answer; check `hosts[].address` and `port`, and that sshd runs",
        };
    if (
        /Failed to connect socket to '.*libvirt|cannot connect to daemon|End of file while reading data|Cannot recv data|Broken pipe|keepalive timeout/i.test(
            s,
        )
    )
        return {
            stage: "libvirt",
            notFound: false,
            transient: true,
            hint: "libvirtd on the host does not answer; is libvirtd running and may this user use qemu:///system?",
        };
    // A pool refuses a refresh while one of its volumes is mid-transfer (another member's base image
    // upload, in the same `up`): busy, not broken, and gone once that transfer ends.
    if (/has asynchronous jobs running/i.test(s))
        return {
            stage: "libvirt",
            notFound: false,
            transient: true,
            hint: "the storage pool is busy with a volume transfer (an upload in progress); tried again",
        };
    const notFound = /not found|no storage vol|no domain with matching|failed to get (domain|vol|pool)/i.test(s);
    return { stage: "libvirt", notFound, transient: false, hint: "" };
}

/**
 * Builds a LibvirtError, its class tag in front of the message. Exported so callers in other modules can
 * make their own with the same shape. `mayHaveRun` false: the command provably never reached libvirtd.
 */
export function libvirtError(
    message: string,
    stage: LibvirtStage,
    notFound: boolean,
    transient: boolean,
    mayHaveRun?: boolean,
): LibvirtError {
    const e = classify(new Error(message), transient ? "transient" : "permanent") as LibvirtError;
    e.name = "LibvirtError";
    e.stage = stage;
    e.notFound = notFound;
    e.transient = transient;
    if (mayHaveRun !== undefined) e.mayHaveRun = mayHaveRun;
    return e;
}

export function isNotFound(e: unknown): boolean {
    return !!e && typeof e === "object" && (e as LibvirtError).notFound === true;
}

/** The LibvirtError for a virsh run that failed (`err` from execFile), classified from its stderr. */
export function virshFailure(
    err: Error,
    stderr: string,
    args: string[],
    where: string,
    timeoutMs: number,
    signal?: AbortSignal,
): LibvirtError {
    const text = stderr.replace(/\s+$/, "");
    if ((err as any).code === "ENOENT")
        return libvirtError(
            `virsh is not installed on the machine running Pulumi (apt-get install libvirt-clients)`,
            "libvirt",
            false,
            false,
        );
    // Stopped by the caller's deadline (a provider check's timeout): not the host's failure to retry.
    if (signal?.aborted)
        return libvirtError(
            `libvirt ${where}: \`virsh ${args[0]}\` stopped: ${(signal.reason as Error | undefined)?.message ?? "aborted"}`,
            "timeout",
            false,
            true,
        );
    if ((err as any).killed)
        return libvirtError(
            `libvirt ${where}: \`virsh ${args[0]}\` timed out after ${timeoutMs} ms`,
            "timeout",
            false,
            true,
        );
    const c = classifyVirshFailure(text);
    if (!text)
        return libvirtError(
            `libvirt ${where}: \`virsh ${args[0]}\` failed without a message (exit ${(err as any).code ?? ""}${(err as any).signal ? `, signal ${(err as any).signal}` : ""})`,
            "libvirt",
            false,
            true,
        );
    // virsh prints this line only when opening the connection failed: the command never ran.
    const connectFailed = /failed to connect to the hypervisor/.test(text);
    const msg = text
        .split("\n")
        .map((l) => l.replace(/^error: /, ""))
        .filter((l) => l && l !== "failed to connect to the hypervisor")
        .join("; ");
    return libvirtError(
        `libvirt ${where}: \`virsh ${args[0]}\` failed (${c.stage}): ${msg}${c.hint ? ` — ${c.hint}` : ""}`,
        c.stage,
        c.notFound,
        c.transient,
        !connectFailed,
    );
}

/** Runs `fn`, treating "not found" as success (deletes that tolerate already-gone pieces). */
export async function ignoreNotFound(fn: () => Promise<unknown>): Promise<void> {
    try {
        await fn();
    } catch (e) {
        if (!isNotFound(e)) throw e;
    }
}
