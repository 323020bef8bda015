/**
 * Provider health for `type: kvm`: one verdict per host, walking the stages a real operation needs —
 * key material, TCP to sshd, SSH (host key, auth) + libvirt (version, hostname), storage pool (exists,
 * running, free space). A failure names the stage it stopped at. Secrets never reach verdicts.
 */
import * as net from "node:net";
import type { KvmProviderConfig } from "../config/providers/kvm";
import type { Checker, CheckerFactory, CheckVerdict } from "./types";
import { LibvirtError, withLibvirt } from "../../components/kvm/libvirt";
import { connectionFor, KvmHost, privateKeyText } from "../../components/kvm/naming";

/** Below this many free bytes in a storage pool the host is reported unhealthy. @default 2 GiB */
export const MIN_FREE_BYTES = 2 * 1024 ** 3;

function tcpOpen(address: string, port: number, timeoutMs: number): Promise<string | undefined> {
    return new Promise((resolve) => {
        const sock = net.connect({ host: address, port });
        const done = (err?: string) => {
            sock.destroy();
            resolve(err);
        };
        sock.setTimeout(timeoutMs, () => done(`no answer within ${timeoutMs} ms`));
        sock.once("connect", () => done());
        sock.once("error", (e) => done(e.message));
    });
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
    let t: NodeJS.Timeout;
    return Promise.race([p, new Promise<T>((_, rej) => (t = setTimeout(() => rej(Object.assign(new Error(`${what} timed out after ${ms} ms`), { stage: "timeout" })), ms)))]).finally(() => clearTimeout(t));
}

/** Checks one host; never throws. */
export async function checkKvmHost(entry: KvmProviderConfig, host: KvmHost, timeoutMs = 10000, minFreeBytes = MIN_FREE_BYTES): Promise<CheckVerdict> {
    const target = host.name;
    const fail = (stage: string, message: string, details?: Record<string, unknown>): CheckVerdict => ({ target, ok: false, stage, message, ...(details ? { details } : {}) });
    let key: string | undefined;
    try {
        key = privateKeyText(entry);
        if (key !== undefined && !/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key)) return fail("key", "`ssh.privateKey` does not look like a private key (expected an unencrypted OpenSSH/PEM private key)");
    } catch (e) {
        return fail("key", (e as Error).message);
    }
    const tcp = await tcpOpen(host.address, host.port, timeoutMs);
    if (tcp) return fail("tcp", `cannot reach sshd at ${host.address}:${host.port}: ${tcp}; check \`address\`/\`port\` and that sshd runs`);
    try {
        return await withTimeout(
            withLibvirt(connectionFor(entry, host), key, async (virsh) => {
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
            }),
            timeoutMs * 4,
            `checking ${host.name}`,
        );
    } catch (e) {
        const stage = (e as LibvirtError).stage ?? "libvirt";
        return fail(stage === "host-key" || stage === "ssh-auth" ? stage : stage, (e as Error).message);
    }
}

/** One Checker per `type: kvm` entry: every host checked in parallel. */
export const kvmChecker: CheckerFactory<KvmProviderConfig> = (providerName, entry, options) => {
    const checker: Checker = {
        provider: providerName,
        kind: "kvm",
        check: async () => Promise.all(entry.hosts.map((h) => checkKvmHost(entry, h, options?.timeoutMs ?? 10000))),
    };
    return checker;
};
