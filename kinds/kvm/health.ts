/**
 * Provider health for `type: kvm`: one verdict per host, walking the stages a real operation needs —
 * key material, TCP to sshd, SSH (host key, auth) + libvirt (version, hostname), storage pool (exists,
 * running, free space). A failure names the stage it stopped at. Secrets never reach verdicts.
 */
import type { KvmProviderConfig } from "./config";
import type { Checker, CheckerFactory, CheckVerdict } from "../../src/providers-health/types";
import { checkEach } from "../../src/providers-health/timed";
import { LibvirtError, LibvirtSessionOptions, withLibvirt } from "./libvirt";
import { virshDebugLog } from "./virsh-log";
import { connectionFor, KvmHost, privateKeyText } from "./naming";
import { portAnswers } from "../shared/net";

/** Below this many free bytes in a storage pool the host is reported unhealthy. @default 2 GiB */
export const MIN_FREE_BYTES = 2 * 1024 ** 3;

/** Checks one host; never throws. */
export async function checkKvmHost(entry: KvmProviderConfig, host: KvmHost, timeoutMs = 10000, minFreeBytes = MIN_FREE_BYTES, session: LibvirtSessionOptions = {}): Promise<CheckVerdict> {
    const target = host.name;
    const fail = (stage: string, message: string, details?: Record<string, unknown>): CheckVerdict => ({ target, ok: false, stage, message, ...(details ? { details } : {}) });
    let key: string | undefined;
    try {
        key = privateKeyText(entry);
        if (key !== undefined && !/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key)) return fail("key", "`ssh.privateKey` does not look like a private key (expected an unencrypted OpenSSH/PEM private key)");
    } catch (e) {
        return fail("key", (e as Error).message);
    }
    let why = "";
    if (!(await portAnswers(host.port, timeoutMs, host.address, (r) => (why = r))))
        return fail("tcp", `cannot reach sshd at ${host.address}:${host.port}: ${why}; check \`address\`/\`port\` and that sshd runs`);
    try {
        // Each virsh call below has its own timeout (timeoutMs): the check ends within about 3 × timeoutMs.
        return await withLibvirt(connectionFor(entry, host), key, async (virsh) => {
            const version = (await virsh(["version", "--daemon"], { timeoutMs })).trim();
            const hostname = (await virsh(["hostname"], { timeoutMs })).trim();
            const libvirtVersion = /Running against daemon:\s*(\S+)/.exec(version)?.[1] ?? /library:\s*libvirt\s*(\S+)/i.exec(version)?.[1] ?? "";
            let info: string;
            try {
                info = await virsh(["pool-info", "--bytes", host.storagePool], { timeoutMs });
            } catch (e) {
                if ((e as LibvirtError).notFound) return fail("pool", `storage pool \`${host.storagePool}\` does not exist on ${host.name}; define it (virsh pool-define-as) or fix \`storagePool\``, { libvirtVersion, hostname });
                throw e;
            }
            const state = /State:\s*(\S+)/.exec(info)?.[1] ?? "unknown";
            const available = Number(/Available:\s*(\d+)/.exec(info)?.[1] ?? NaN);
            const details = { libvirtVersion, hostname, storagePool: host.storagePool, poolState: state, availableBytes: available };
            if (state !== "running") return fail("pool", `storage pool \`${host.storagePool}\` is ${state}; start it (virsh pool-start ${host.storagePool})`, details);
            if (available < minFreeBytes) return fail("pool", `storage pool \`${host.storagePool}\` has ${available} bytes free, below ${minFreeBytes}`, details);
            return { target, ok: true, message: `libvirt ${libvirtVersion} on ${hostname} answers; pool ${host.storagePool} running with ${available} bytes free`, details };
        }, session);
    } catch (e) {
        return fail((e as LibvirtError).stage ?? "libvirt", (e as Error).message);
    }
}

/** One Checker per `type: kvm` entry: every host checked in parallel. */
export const kvmChecker: CheckerFactory<KvmProviderConfig> = (providerName, entry, options) => {
    const checker: Checker = {
        provider: providerName,
        kind: "kvm",
        check: async () => checkEach(entry.hosts, (h) => checkKvmHost(entry, h, options?.timeoutMs ?? 10000, MIN_FREE_BYTES, { onCall: virshDebugLog(options?.log) })),
    };
    return checker;
};
