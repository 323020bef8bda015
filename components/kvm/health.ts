/**
 * Provider health for `type: kvm`: one verdict per host, walking the stages a real operation needs —
 * key material, TCP to sshd, SSH (host key, auth) + libvirt (version, hostname), storage pool (exists,
 * running, free space). A failure names the stage it stopped at. Secrets never reach verdicts.
 */
import type { KvmProviderConfig } from "./config";
import type { Checker, CheckerFactory, CheckVerdict } from "../kind";
import { checkEach } from "../shared/check-each";
import { LibvirtError, LibvirtSessionOptions, withLibvirt } from "./libvirt";
import { virshDebugLog } from "./virsh-log";
import { connectionFor, KvmHost, privateKeyText } from "./naming";
import { portAnswers } from "../shared/net";

/** Below this many free bytes in a storage pool the host is reported unhealthy. @default 2 GiB */
export const MIN_FREE_BYTES = 2 * 1024 ** 3;

/**
 * Checks one host; never throws. `session.onCall` sees each virsh call (the debug line per call). The whole walk has one deadline, `timeoutMs` (`--provider-check-timeout`),
 * or less when `signal` aborts first: a host that accepts TCP and then goes silent (a hung sshd, a stopped
 * libvirtd) gets a `timeout` verdict naming the stage it stalled at, on time, and its virsh children are
 * killed. Without one deadline over the walk, each virsh call (and its retries) had its own 10 s and the
 * verdict came after about 33 s whatever the operator set.
 */
export async function checkKvmHost(
    entry: KvmProviderConfig,
    host: KvmHost,
    timeoutMs = 10000,
    minFreeBytes = MIN_FREE_BYTES,
    signal?: AbortSignal,
    session: LibvirtSessionOptions = {},
): Promise<CheckVerdict> {
    const deadline = new AbortController();
    const timer = setTimeout(
        () => deadline.abort(new Error(`no verdict within the ${timeoutMs} ms check timeout`)),
        timeoutMs,
    );
    const outer = () =>
        deadline.abort(signal?.reason instanceof Error ? signal.reason : new Error("the provider check was stopped"));
    if (signal?.aborted) outer();
    signal?.addEventListener("abort", outer, { once: true });
    const at = { stage: "key", step: "reading the key" };
    const late = new Promise<CheckVerdict>((resolve) => {
        const verdict = () =>
            resolve({
                target: host.name,
                ok: false,
                stage: "timeout",
                message: `${host.name} (${host.address}:${host.port}) stalled at stage ${at.stage} (${at.step}): ${(deadline.signal.reason as Error).message}; is sshd or libvirtd on the host hung?`,
                details: { stalledAt: at.stage },
            });
        if (deadline.signal.aborted) verdict();
        else deadline.signal.addEventListener("abort", verdict, { once: true });
    });
    try {
        // The race gives the verdict on time even if some step ignored the signal; the signal ends the rest.
        return await Promise.race([
            walkHost(entry, host, minFreeBytes, deadline.signal, Date.now() + timeoutMs, at, session),
            late,
        ]);
    } finally {
        clearTimeout(timer);
        signal?.removeEventListener("abort", outer);
        deadline.abort(new Error("the check is over"));
    }
}

/** The stages of one host's check, in order; `at` says where it is (for the timeout verdict). */
async function walkHost(
    entry: KvmProviderConfig,
    host: KvmHost,
    minFreeBytes: number,
    signal: AbortSignal,
    deadlineAt: number,
    at: { stage: string; step: string },
    session: LibvirtSessionOptions,
): Promise<CheckVerdict> {
    const target = host.name;
    const fail: Fail = (stage, message, details) => ({
        target,
        ok: false,
        stage,
        message,
        ...(details ? { details } : {}),
    });
    let key: string | undefined;
    try {
        key = privateKeyText(entry);
        if (key !== undefined && !/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key))
            return fail(
                "key",
                "`ssh.privateKey` does not look like a private key (expected an unencrypted OpenSSH/PEM private key)",
            );
    } catch (e) {
        return fail("key", (e as Error).message);
    }
    let why = "";
    at.stage = "tcp";
    at.step = `connecting to ${host.address}:${host.port}`;
    if (!(await portAnswers(host.port, Math.max(1, deadlineAt - Date.now()), host.address, (r) => (why = r))))
        return fail(
            "tcp",
            `cannot reach sshd at ${host.address}:${host.port}: ${why}; check \`address\`/\`port\` and that sshd runs`,
        );
    try {
        return await withLibvirt(
            connectionFor(entry, host),
            key,
            async (virsh) => {
                // Each call is killed when the deadline passes, and its retries stop.
                const call = (args: string[]) => {
                    at.stage = "libvirt";
                    at.step = `virsh ${args[0]}`;
                    return virsh(args, { signal, timeoutMs: Math.max(1, deadlineAt - Date.now()) });
                };
                return libvirtVerdict(call, host, minFreeBytes, fail);
            },
            session,
        );
    } catch (e) {
        return fail((e as LibvirtError).stage ?? "libvirt", (e as Error).message);
    }
}

/** A failed verdict for this host at `stage`. */
type Fail = (stage: string, message: string, details?: Record<string, unknown>) => CheckVerdict;

/**
 * What the host's libvirt says through `call` (each call bounded by the check's deadline): its version
 * and name, and whether the storage pool runs with at least `minFreeBytes` free.
 */
async function libvirtVerdict(
    call: (args: string[]) => Promise<string>,
    host: KvmHost,
    minFreeBytes: number,
    fail: Fail,
): Promise<CheckVerdict> {
    const version = (await call(["version", "--daemon"])).trim();
    const hostname = (await call(["hostname"])).trim();
    const libvirtVersion =
        /Running against daemon:\s*(\S+)/.exec(version)?.[1] ?? /library:\s*libvirt\s*(\S+)/i.exec(version)?.[1] ?? "";
    let info: string;
    try {
        info = await call(["pool-info", "--bytes", host.storagePool]);
    } catch (e) {
        if ((e as LibvirtError).notFound)
            return fail(
                "pool",
                `storage pool \`${host.storagePool}\` does not exist on ${host.name}; define it (virsh pool-define-as) or fix \`storagePool\``,
                { libvirtVersion, hostname },
            );
        throw e;
    }
    const state = /State:\s*(\S+)/.exec(info)?.[1] ?? "unknown";
    const available = Number(/Available:\s*(\d+)/.exec(info)?.[1] ?? NaN);
    const details = {
        libvirtVersion,
        hostname,
        storagePool: host.storagePool,
        poolState: state,
        availableBytes: available,
    };
    if (state !== "running")
        return fail(
            "pool",
            `storage pool \`${host.storagePool}\` is ${state}; start it (virsh pool-start ${host.storagePool})`,
            details,
        );
    if (available < minFreeBytes)
        return fail(
            "pool",
            `storage pool \`${host.storagePool}\` has ${available} bytes free, below ${minFreeBytes}`,
            details,
        );
    return {
        target: host.name,
        ok: true,
        message: `libvirt ${libvirtVersion} on ${hostname} answers; pool ${host.storagePool} running with ${available} bytes free`,
        details,
    };
}

/**
 * One Checker per `type: kvm` entry: every host checked in parallel, each with its own deadline, and each
 * verdict handed to `onVerdict` as soon as it is known (a silent host does not hold back the others).
 */
export const kvmChecker: CheckerFactory<KvmProviderConfig> = (providerName, entry, options) => {
    const checker: Checker = {
        provider: providerName,
        kind: "kvm",
        // checkEach times each host for the per-target duration gauge.
        check: async (signal, onVerdict) =>
            checkEach(entry.hosts, async (h) => {
                const v = await checkKvmHost(entry, h, options?.timeoutMs ?? 10000, MIN_FREE_BYTES, signal, {
                    onCall: virshDebugLog(options?.log),
                });
                onVerdict?.(v);
                return v;
            }),
    };
    return checker;
};
