/**
 * Volume operations shared by the KVM resources: uploads, digests, backing-file lookups. Plain functions
 * over a `Virsh` (see ./libvirt), serialized by value with the providers that use them.
 */
import {
    ignoreNotFound,
    KvmConnection,
    listDomains,
    listVolumes,
    replaceDiff,
    Virsh,
    volumePath,
    withLibvirt,
    withTempDir,
} from "./libvirt";
import { backingPathOf, volumeXml } from "./xml";
import { explainUnreachableDelete, memberOfVolumeName } from "./unreachable";
import { deadlineError, totalDeadlineMs, TransferLimits, transferLimits } from "./transfer";

/** Creates a volume from its XML (`vol-create`). Fails, touching nothing, when the name is taken. */
export async function createVolume(virsh: Virsh, pool: string, xml: string): Promise<void> {
    const fs = require("node:fs") as typeof import("node:fs");
    const path = require("node:path") as typeof import("node:path");
    await withTempDir("egress-vol-", async (dir) => {
        fs.writeFileSync(path.join(dir, "vol.xml"), xml);
        await virsh(["vol-create", pool, path.join(dir, "vol.xml")]);
    });
}

/** XML of an empty raw volume exactly as large as a local file (the upload then replaces every byte). */
export function uploadTargetXml(name: string, file: string): string {
    const fs = require("node:fs") as typeof import("node:fs");
    return volumeXml(name, fs.statSync(file).size, "raw");
}

/** What a long virsh transfer (vol-upload, vol-download) needs for its deadline and its message. */
export interface TransferDeadline {
    /** The image's `transfer` settings (unset fields: the defaults). */
    limits?: Partial<TransferLimits>;
    /** Config path of those settings, named when the deadline is missed. @default "transfer" */
    where?: string;
    /** What is moving, for the message (e.g. "image `tiny` of provider `lab`"). */
    what?: string;
}

/**
 * Runs one transfer command under its total deadline (graceSeconds + bytes / minKiBPerSecond): virsh is
 * killed then and not retried, and the error says which deadline it missed. virsh reports no progress,
 * so the idle deadline cannot apply here; the total one bounds a host that vanished mid-transfer.
 */
async function virshTransfer(virsh: Virsh, args: string[], bytes: number, d: TransferDeadline): Promise<void> {
    const limits = transferLimits(d.limits);
    const ms = totalDeadlineMs(bytes, limits);
    const signal = AbortSignal.timeout(ms);
    const t0 = Date.now();
    try {
        await virsh(args, { signal, timeoutMs: ms + 1000 });
    } catch (e) {
        if (!signal.aborted) throw e;
        throw deadlineError(
            `${d.what ?? "volume"}: \`virsh ${args[0]}\` of ${args[3]}`,
            "total",
            limits,
            { bytes, elapsedMs: Date.now() - t0 },
            d.where ?? "transfer",
        );
    }
}

/**
 * Uploads a local file into existing volume `name` under the transfer deadline, then refreshes the pool
 * so libvirt probes the new bytes (format, virtual size: volumeCapacity of an uploaded qcow2 depends on it).
 */
export async function uploadInto(
    virsh: Virsh,
    pool: string,
    name: string,
    file: string,
    deadline: TransferDeadline = {},
): Promise<void> {
    const fs = require("node:fs") as typeof import("node:fs");
    await virshTransfer(virsh, ["vol-upload", "--pool", pool, name, file], fs.statSync(file).size, deadline);
    await virsh(["pool-refresh", pool]);
}

/**
 * sha256 and size of a volume's bytes as stored on the host (streams `vol-download` through a hash),
 * under the transfer deadline for `bytes` (unset: the larger of the volume's capacity and allocation,
 * which is at least what vol-download moves).
 */
export async function remoteDigest(
    virsh: Virsh,
    pool: string,
    name: string,
    deadline: TransferDeadline & { bytes?: number } = {},
): Promise<{ sha256: string; bytes: number }> {
    const fs = require("node:fs") as typeof import("node:fs");
    const path = require("node:path") as typeof import("node:path");
    const crypto = require("node:crypto") as typeof import("node:crypto");
    let size = deadline.bytes;
    if (size === undefined) {
        const info = await virsh(["vol-info", "--bytes", "--pool", pool, name]);
        size = Math.max(
            Number(/Capacity:\s+(\d+)/.exec(info)?.[1] ?? 0),
            Number(/Allocation:\s+(\d+)/.exec(info)?.[1] ?? 0),
        );
    }
    return withTempDir("egress-vol-", async (dir) => {
        const file = path.join(dir, "vol");
        await virshTransfer(virsh, ["vol-download", "--pool", pool, name, file], size!, deadline);
        const hash = crypto.createHash("sha256");
        let bytes = 0;
        for await (const chunk of fs.createReadStream(file)) {
            hash.update(chunk as Buffer);
            bytes += (chunk as Buffer).length;
        }
        return { sha256: hash.digest("hex"), bytes };
    });
}

/** Deletes a volume; succeeds when it is already gone. */
export async function deleteVolume(virsh: Virsh, pool: string, name: string): Promise<void> {
    await ignoreNotFound(() => virsh(["vol-delete", "--pool", pool, name]));
}

/** `s` as one token for virsh's own tokenizer (names come from libvirt or config; quotes are dropped). */
function virshArg(s: string): string {
    return `'${s.replace(/'/g, "")}'`;
}

/**
 * Runs `command(name)` for every name, 50 at a time, each batch over one SSH connection (virsh runs
 * `;`-separated commands itself, no shell involved), and returns each name's output, in order. Every
 * command is preceded by an `echo` marker and the output is split on the markers, so a command that
 * prints nothing or fails yields "" for its own name and never shifts the others.
 */
async function virshEach(virsh: Virsh, names: string[], command: (name: string) => string): Promise<string[]> {
    const outputs: string[] = names.map(() => "");
    const chunk = 50;
    for (let i = 0; i < names.length; i += chunk) {
        const part = names.slice(i, i + chunk);
        const out = await virsh([part.map((n, j) => `echo @@egress-item-${j}@@ ; ${command(n)}`).join(" ; ")]);
        // virsh -q may print the next command's output on the marker's line: split on the marker itself.
        const pieces = out.split(/@@egress-item-(\d+)@@/);
        for (let k = 1; k + 1 < pieces.length; k += 2) outputs[i + Number(pieces[k])] = pieces[k + 1];
    }
    return outputs;
}

/** Names of the volumes in `pool` whose backing file is `backing` (the overlays living on a base). */
export async function volumesBackedBy(virsh: Virsh, pool: string, backing: string): Promise<string[]> {
    const names = (await listVolumes(virsh, pool)).filter((n) => n.endsWith(".qcow2"));
    const docs = await virshEach(virsh, names, (n) => `vol-dumpxml --pool ${virshArg(pool)} ${virshArg(n)}`);
    return names.filter((_, j) => backingPathOf(docs[j]) === backing);
}

/** Capacity (virtual size) of a volume in bytes, from `vol-info --bytes`. */
export async function volumeCapacity(virsh: Virsh, pool: string, name: string): Promise<number> {
    const out = await virsh(["vol-info", "--bytes", "--pool", pool, name]);
    const m = /Capacity:\s+(\d+)/.exec(out);
    if (!m) throw new Error(`cannot read the capacity of volume ${name}: ${out.trim()}`);
    return Number(m[1]);
}

/**
 * Whether a replace must delete the old volume first: when the new one has the same name in the same
 * pool, both resources are the same physical volume (on the same machine, or possibly so when only the
 * host's config name changed), so create-before-delete would let the old resource's `delete` remove the
 * disk its replacement just made. Used by the Overlay and SeedDisk diffs.
 */
export function sameVolumeName(
    olds: { volume?: string; storagePool?: string },
    news: { volume?: string; storagePool?: string },
): boolean {
    return olds.volume === news.volume && olds.storagePool === news.storagePool;
}

/** Resource ID of a volume: `<host>/<pool>/<volume>` (what `egress gc` matches against state). */
export function volumeId(host: string, pool: string, name: string): string {
    return `${host}/${pool}/${name}`;
}

/**
 * Creates volume `name` from `xml`, then runs `fill(path)`; if `fill` throws, the volume is deleted before
 * the error propagates, so a failed `create` leaves nothing behind. The cleanup is armed only once OUR
 * `vol-create` succeeded: when it fails (the name exists: another pool or stack created it meanwhile),
 * the error propagates and the other's volume is never touched.
 */
export async function withNewVolume<T>(
    virsh: Virsh,
    pool: string,
    name: string,
    xml: string,
    fill: (path: string) => Promise<T>,
): Promise<T> {
    try {
        await createVolume(virsh, pool, xml);
    } catch (e) {
        if (await volumePath(virsh, pool, name).catch(() => undefined))
            throw new Error(
                `volume ${name} appeared in pool ${pool} while this resource was creating it (another pool or stack creating the same volume?); it was left alone, run up again to use it. (${(e as Error).message})`,
            );
        throw e;
    }
    try {
        const p = await volumePath(virsh, pool, name);
        if (!p) throw new Error(`volume ${name} vanished right after creation in pool ${pool}`);
        return await fill(p);
    } catch (e) {
        await deleteVolume(virsh, pool, name).catch(() => undefined);
        throw e;
    }
}

/** Names of the defined domains (running or not) with a disk whose source is `volPath` (`domblklist` of each). */
export async function domainsUsing(virsh: Virsh, volPath: string): Promise<string[]> {
    const names = await listDomains(virsh);
    const lists = await virshEach(virsh, names, (n) => `domblklist --details ${virshArg(n)}`);
    return names.filter((_, j) =>
        lists[j].split("\n").some((l) => l.trim().split(/\s+/).slice(3).join(" ") === volPath),
    );
}

/**
 * Clears the name for creating a per-member volume (overlay, seed). A volume already there is deleted
 * only when no defined domain uses it: then it is provably a leftover of an interrupted create of ours
 * (per-member names carry the stack's hash prefix and the member, so only this member makes them) and
 * holds nothing anyone runs on. A volume some domain uses is never deleted: that is an error.
 */
export async function clearLeftoverVolume(virsh: Virsh, pool: string, name: string, what: string): Promise<void> {
    const p = await volumePath(virsh, pool, name);
    if (!p) return;
    const users = await domainsUsing(virsh, p);
    if (users.length > 0)
        throw new Error(
            `${what}: volume ${name} already exists in pool ${pool} and domain(s) ${users.join(", ")} use it; a disk in use is never deleted. If it is a leftover of an interrupted run, remove it (\`egress gc\`) and run up again`,
        );
    await deleteVolume(virsh, pool, name);
}

/** What every per-member volume resource (Overlay, SeedDisk) carries. */
export interface MemberVolumeProps {
    conn: KvmConnection;
    privateKey?: string;
    storagePool: string;
    volume: string;
    path: string;
}

/**
 * The diff/update/delete a per-member volume provider shares: any key in `replaceOn` (or the host)
 * replaces; a new name is created before the old goes, the same name must go first; updates keep the
 * volume's path; delete tolerates a volume that is already gone.
 */
export function memberVolumeLifecycle<I extends Omit<MemberVolumeProps, "path">, K extends keyof I & string>(
    replaceOn: readonly K[],
) {
    return {
        async diff(_id: string, olds: I & { path: string }, news: I) {
            const { replaces, changes } = replaceDiff(olds, news, replaceOn);
            return { changes, replaces, deleteBeforeReplace: replaces.length > 0 && sameVolumeName(olds, news) };
        },
        async update(_id: string, olds: I & { path: string }, news: I) {
            return { outs: { ...olds, ...news, path: olds.path } };
        },
        async delete(_id: string, props: I & { path: string }) {
            await withLibvirt(
                props.conn,
                props.privateKey,
                (virsh) => deleteVolume(virsh, props.storagePool, props.volume),
                { member: memberOfVolumeName(props.volume) },
            ).catch((e) => {
                throw explainUnreachableDelete(e, `volume ${props.volume}`, memberOfVolumeName(props.volume));
            });
        },
    };
}
