/**
 * The one libvirt client every KVM resource, the health checker and the GC collector use: `virsh` over a
 * `qemu+libssh://` URI, run with argv arrays (child_process.execFile, never a shell).
 *
 * Why qemu+libssh: it honours `known_hosts=`, `keyfile=` and `sshauth=privkey`, so the host key is checked
 * against the operator's known_hosts and nothing from ~/.ssh or an agent leaks in. (`qemu+ssh` ignores
 * `known_hosts=`.) With stdin closed, libvirt refuses an unknown host key instead of prompting, and a
 * mismatching key is always fatal: there is no silent downgrade.
 *
 * These are plain functions that `require` node modules inside: dynamic providers are serialized by the
 * engine and these functions travel with them by value. The private key arrives as a string (a decrypted
 * Pulumi secret) or a path; a string is written to a 0600 file in a 0700 temp dir for the duration of one
 * session and removed afterwards. It never appears in arguments, URIs other than as that path, or errors.
 *
 * Every failure carries its class (components/shared/errors.ts) as a field and a message tag. Transient ones are
 * retried (components/shared/retry.ts): any command when virsh never reached libvirtd (refused, dropped or
 * timed-out SSH connect, libvirtd not answering), read-only commands also when the connection dropped
 * or timed out mid-command. A mutating command (define, start, vol-create...) that lost its connection
 * may have run, so it fails, still as transient, and the next operation decides from what it finds.
 */
import { defaultRetrySchedule, RetrySchedule, withRetry } from "../shared/retry";
import { type Virsh, type VirshCall, virshCommandNames } from "./virsh-call";
import { libvirtError, virshFailure, virshRetryable } from "./libvirt-errors";

export type { Virsh, VirshCall, VirshCallOptions } from "./virsh-call";
export { virshCommandNames } from "./virsh-call";
// One import for callers: the failure shape and the read-only queries live beside this file.
export * from "./libvirt-errors";
export * from "./libvirt-queries";

/** Where a libvirt host is and how to reach it. Plain data: safe to keep in state (no key material). */
export interface KvmConnection {
    /** Host name from config (`hosts[].name`); used in messages. */
    host: string;
    user: string;
    address: string;
    port: number;
    /** Path of a private key file on the machine running Pulumi (alternative to key material). */
    privateKeyPath?: string;
    /** known_hosts content. Exactly one of `knownHosts` or `knownHostsPath`. */
    knownHosts?: string;
    knownHostsPath?: string;
}

/** What a session adds to every call: how transient failures are retried, and whose work it is (for messages). */
export interface LibvirtSessionOptions {
    /** @default defaultRetrySchedule() (EGRESS_RETRY_SCHEDULE or 4 tries, 1 s → 8 s) */
    retry?: RetrySchedule;
    /** The egress member the session works for, named in every error. */
    member?: string;
    /**
     * Told about every virsh call when it ends (the service logs it at debug: components/kvm/virsh-log.ts).
     * Unset in the engine's dynamic providers: they run in the provider process, which has no log.
     */
    onCall?: (call: VirshCall) => void;
}

/** Where `conn` points, for messages: `root@10.0.0.5:22 (host beelink)`, or `... (host beelink, member web-0)`. */
export function describeConnection(conn: KvmConnection, member?: string): string {
    return `${conn.user}@${conn.address}:${conn.port} (host ${conn.host}${member ? `, member ${member}` : ""})`;
}

/**
 * Why `address` is not a plain host address, or undefined when it is one: an RFC 1123 host name, a
 * dotted-quad IPv4 address or an IPv6 literal (no brackets, no zone id). Anything else (`?`, `#`, `/`,
 * `@`, `:port`, whitespace, `%`) could change the meaning of the libvirt URI it is put into. Self-contained
 * (no imports): the config schema uses it, and so does `libvirtUri` in the serialized providers.
 */
export function hostAddressProblem(address: string): string | undefined {
    const bad = `must be a host name (RFC 1123: letters, digits and '-' in dot-separated labels), an IPv4 address or an IPv6 address without brackets; no user, port, path or spaces (got ${JSON.stringify(address)})`;
    if (typeof address !== "string" || address.length === 0 || address.length > 253) return bad;
    const octet = "(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
    if (new RegExp(`^${octet}(\\.${octet}){3}$`).test(address)) return undefined;
    if (address.includes(":")) {
        // IPv6: hex groups and `::` only (node's own parser decides), optionally ending in an IPv4 quad.
        const net = require("node:net") as typeof import("node:net");
        return /^[0-9a-fA-F:.]+$/.test(address) && net.isIPv6(address) ? undefined : bad;
    }
    const labels = address.replace(/\.$/, "").split(".");
    const label = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
    if (!labels.every((l) => label.test(l))) return bad;
    // An all-numeric last label is an IPv4 address that did not parse (e.g. 10.0.0.256), not a name.
    if (/^\d+$/.test(labels[labels.length - 1])) return bad;
    return undefined;
}

/**
 * `qemu+libssh://user@address:port/system?...` with the given file paths. IPv6 literals are bracketed.
 * Refuses an address or port that is not plain (config validation checks the same; this guards callers
 * that bypass it), so nothing can cut off `known_hosts_verify`.
 */
export function libvirtUri(conn: KvmConnection, keyFile: string, knownHostsFile: string): string {
    const bare = /^\[[^\]]*\]$/.test(conn.address) ? conn.address.slice(1, -1) : conn.address;
    const problem = hostAddressProblem(bare);
    if (problem) throw libvirtError(`libvirt host ${conn.host}: address ${problem}`, "tcp", false, false);
    if (!Number.isInteger(conn.port) || conn.port < 1 || conn.port > 65535)
        throw libvirtError(
            `libvirt host ${conn.host}: port must be 1-65535 (got ${JSON.stringify(conn.port)})`,
            "tcp",
            false,
            false,
        );
    const addr = bare.includes(":") ? `[${bare}]` : bare;
    const q = [
        `keyfile=${encodeURIComponent(keyFile)}`,
        `known_hosts=${encodeURIComponent(knownHostsFile)}`,
        "known_hosts_verify=normal",
        "sshauth=privkey",
        "no_tty=1",
    ].join("&");
    return `qemu+libssh://${encodeURIComponent(conn.user)}@${addr}:${conn.port}/system?${q}`;
}

/**
 * The connection part of every KVM resource's diff, in one place so all four replace alike: another
 * `host` (a different machine) replaces; other connection details (address, port, user, known_hosts,
 * key path) or a new private key only update state, since nothing on the host changes.
 */
export function connectionDiff(
    olds: { conn?: KvmConnection; privateKey?: string },
    news: { conn?: KvmConnection; privateKey?: string },
): { replaces: string[]; changes: boolean } {
    const replaces = olds.conn?.host !== news.conn?.host ? ["conn"] : [];
    const changes =
        replaces.length > 0 ||
        JSON.stringify(olds.conn) !== JSON.stringify(news.conn) ||
        (olds.privateKey ?? null) !== (news.privateKey ?? null);
    return { replaces, changes };
}

/**
 * A KVM resource's diff: `keys` whose values differ (compared as JSON, unset = null) replace, then the
 * connection rule (connectionDiff). Callers add their own `changes` and `deleteBeforeReplace`.
 */
export function replaceDiff<K extends string>(
    olds: { [k in K]?: unknown } & { conn?: KvmConnection; privateKey?: string },
    news: { [k in K]?: unknown } & { conn?: KvmConnection; privateKey?: string },
    keys: readonly K[],
): { replaces: string[]; changes: boolean } {
    const conn = connectionDiff(olds, news);
    const replaces: string[] = [
        ...keys.filter((k) => JSON.stringify(olds[k] ?? null) !== JSON.stringify(news[k] ?? null)),
        ...conn.replaces,
    ];
    return { replaces, changes: replaces.length > 0 || conn.changes };
}

/**
 * Runs `fn` with a fresh private (0700) temp dir `<tmpdir>/<prefix>XXXXXX`, removed afterwards whatever
 * happens. Self-contained (requires inside): serialized with the providers that use it.
 */
export async function withTempDir<T>(prefix: string, fn: (dir: string) => Promise<T>): Promise<T> {
    const fs = require("node:fs") as typeof import("node:fs");
    const os = require("node:os") as typeof import("node:os");
    const path = require("node:path") as typeof import("node:path");
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    try {
        fs.chmodSync(dir, 0o700);
        return await fn(dir);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

/**
 * Opens a session to one host: materializes the key (from `privateKey`, or `conn.privateKeyPath`) and
 * known_hosts into a private temp dir, hands `fn` a `virsh` function, and removes the files afterwards.
 * Each virsh call is its own SSH connection (≈0.1 s on a LAN).
 */
export async function withLibvirt<T>(
    conn: KvmConnection,
    privateKey: string | undefined,
    fn: (virsh: Virsh) => Promise<T>,
    session: LibvirtSessionOptions = {},
): Promise<T> {
    const where = describeConnection(conn, session.member);
    const schedule = session.retry ?? defaultRetrySchedule();
    return withTempDir("egress-kvm-", async (dir) => {
        const keyFile = sessionKeyFile(dir, conn, privateKey, where);
        const uri = libvirtUri(conn, keyFile, sessionKnownHosts(dir, conn, where));
        const once = virshOnce(uri, conn, where, session);
        const virsh: Virsh = (args, opts) =>
            withRetry(() => once(args, opts), {
                schedule,
                signal: opts?.signal,
                retryable: (e) => virshRetryable(args, e),
            });
        return await fn(virsh);
    });
}

/** The session's private key file: `privateKey` written into `dir` (0600), else an existing `conn.privateKeyPath`. */
function sessionKeyFile(dir: string, conn: KvmConnection, privateKey: string | undefined, where: string): string {
    const fs = require("node:fs") as typeof import("node:fs");
    const path = require("node:path") as typeof import("node:path");
    if (privateKey) {
        const keyFile = path.join(dir, "id");
        fs.writeFileSync(keyFile, privateKey.endsWith("\n") ? privateKey : privateKey + "\n", { mode: 0o600 });
        return keyFile;
    }
    if (conn.privateKeyPath) {
        if (!fs.existsSync(conn.privateKeyPath))
            throw libvirtError(
                `libvirt ${where}: private key file ${conn.privateKeyPath} does not exist (ssh.privateKeyPath)`,
                "key",
                false,
                false,
            );
        return conn.privateKeyPath;
    }
    throw libvirtError(
        `libvirt ${where}: no private key: set \`ssh.privateKey\` (a secret) or \`ssh.privateKeyPath\``,
        "key",
        false,
        false,
    );
}

/** The session's known_hosts file: `conn.knownHosts` written into `dir` (0600), else an existing `conn.knownHostsPath`. */
function sessionKnownHosts(dir: string, conn: KvmConnection, where: string): string {
    const fs = require("node:fs") as typeof import("node:fs");
    const path = require("node:path") as typeof import("node:path");
    if (conn.knownHosts) {
        const knownHostsFile = path.join(dir, "known_hosts");
        fs.writeFileSync(knownHostsFile, conn.knownHosts.endsWith("\n") ? conn.knownHosts : conn.knownHosts + "\n", {
            mode: 0o600,
        });
        return knownHostsFile;
    }
    if (conn.knownHostsPath && fs.existsSync(conn.knownHostsPath)) return conn.knownHostsPath;
    // Never fall back to accepting whatever key the host presents.
    throw libvirtError(
        `libvirt ${where}: no known_hosts: set \`ssh.knownHosts\` or an existing \`ssh.knownHostsPath\` (host keys are always verified)`,
        "host-key",
        false,
        false,
    );
}

/**
 * One virsh call at `uri`, not retried: its failure classified (virshFailure), and the call reported to
 * `session.onCall` (command names only, never arguments), whatever its outcome.
 */
function virshOnce(uri: string, conn: KvmConnection, where: string, session: LibvirtSessionOptions): Virsh {
    const cp = require("node:child_process") as typeof import("node:child_process");
    return (args, opts) =>
        new Promise((resolve, reject) => {
            const timeoutMs = opts?.timeoutMs ?? 60000;
            const started = Date.now();
            const child = cp.execFile(
                "virsh",
                ["-q", "-c", uri, ...args],
                {
                    timeout: timeoutMs,
                    signal: opts?.signal,
                    maxBuffer: 64 * 1024 * 1024,
                    env: { ...process.env, LC_ALL: "C" },
                },
                (err, stdout, stderr) => {
                    const failure = err
                        ? virshFailure(err, String(stderr || ""), args, where, timeoutMs, opts?.signal)
                        : undefined;
                    if (session.onCall) {
                        const code = (err as any)?.code;
                        const call: VirshCall = {
                            command: virshCommandNames(args),
                            host: conn.host,
                            target: `${conn.user}@${conn.address}:${conn.port}`,
                            ...(session.member ? { member: session.member } : {}),
                            durationMs: Date.now() - started,
                            exitCode: !err ? 0 : typeof code === "number" ? code : null,
                            ...((err as any)?.signal ? { signal: (err as any).signal } : {}),
                            ok: !failure,
                            ...(failure ? { stage: failure.stage } : {}),
                        };
                        try {
                            session.onCall(call);
                        } catch {
                            /* a log that fails must not fail the call */
                        }
                    }
                    if (failure) reject(failure);
                    else resolve(stdout);
                },
            );
            child.stdin?.end(); // closed stdin: libvirt refuses unknown host keys instead of prompting
        });
}
