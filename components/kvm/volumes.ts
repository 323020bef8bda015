/**
 * Volume operations shared by the KVM resources: uploads, digests, backing-file lookups. Plain functions
 * over a `Virsh` (see ./libvirt), serialized by value with the providers that use them.
 */
import { isNotFound, listVolumes, Virsh, volumePath } from "./libvirt";
import { backingPathOf, volumeXml } from "./xml";

/** Uploads a local file as volume `name` (created first with the file's exact size); returns its path. */
export async function uploadVolume(virsh: Virsh, pool: string, name: string, file: string): Promise<string> {
    const fs = require("node:fs") as typeof import("node:fs");
    const os = require("node:os") as typeof import("node:os");
    const path = require("node:path") as typeof import("node:path");
    const bytes = fs.statSync(file).size;
    const xmlFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "egress-vol-")), "vol.xml");
    try {
        // Created as raw with the exact size, so the upload replaces every byte; format is then probed by refresh.
        fs.writeFileSync(xmlFile, volumeXml(name, bytes, "raw"));
        await virsh(["vol-create", pool, xmlFile]);
        await virsh(["vol-upload", "--pool", pool, name, file], { timeoutMs: 60 * 60 * 1000 });
        await virsh(["pool-refresh", pool]);
        const p = await volumePath(virsh, pool, name);
        if (!p) throw new Error(`volume ${name} vanished right after upload to pool ${pool}`);
        return p;
    } finally {
        fs.rmSync(path.dirname(xmlFile), { recursive: true, force: true });
    }
}

/** sha256 and size of a volume's bytes as stored on the host (streams `vol-download` through a hash). */
export async function remoteDigest(virsh: Virsh, pool: string, name: string): Promise<{ sha256: string; bytes: number }> {
    const fs = require("node:fs") as typeof import("node:fs");
    const os = require("node:os") as typeof import("node:os");
    const path = require("node:path") as typeof import("node:path");
    const crypto = require("node:crypto") as typeof import("node:crypto");
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-vol-"));
    try {
        const file = path.join(dir, "vol");
        await virsh(["vol-download", "--pool", pool, name, file], { timeoutMs: 60 * 60 * 1000 });
        const hash = crypto.createHash("sha256");
        let bytes = 0;
        for await (const chunk of fs.createReadStream(file)) {
            hash.update(chunk as Buffer);
            bytes += (chunk as Buffer).length;
        }
        return { sha256: hash.digest("hex"), bytes };
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

/** Deletes a volume; succeeds when it is already gone. */
export async function deleteVolume(virsh: Virsh, pool: string, name: string): Promise<void> {
    try {
        await virsh(["vol-delete", "--pool", pool, name]);
    } catch (e) {
        if (!isNotFound(e)) throw e;
    }
}

/** Names of the volumes in `pool` whose backing file is `backing` (the overlays living on a base). */
export async function volumesBackedBy(virsh: Virsh, pool: string, backing: string): Promise<string[]> {
    const names = (await listVolumes(virsh, pool)).filter((n) => n.endsWith(".qcow2"));
    const users: string[] = [];
    // One SSH connection for all of them: virsh runs `;`-separated commands itself (no shell involved).
    // Names come from libvirt and are quoted for virsh's own tokenizer.
    const chunk = 50;
    for (let i = 0; i < names.length; i += chunk) {
        const part = names.slice(i, i + chunk);
        const script = part.map((n) => `vol-dumpxml --pool '${pool.replace(/'/g, "")}' '${n.replace(/'/g, "")}'`).join(" ; ");
        const out = await virsh([script]);
        const docs = out.split("</volume>");
        part.forEach((n, j) => {
            if (docs[j] && backingPathOf(docs[j]) === backing) users.push(n);
        });
    }
    return users;
}

/** Capacity (virtual size) of a volume in bytes, from `vol-info --bytes`. */
export async function volumeCapacity(virsh: Virsh, pool: string, name: string): Promise<number> {
    const out = await virsh(["vol-info", "--bytes", "--pool", pool, name]);
    const m = /Capacity:\s+(\d+)/.exec(out);
    if (!m) throw new Error(`cannot read the capacity of volume ${name}: ${out.trim()}`);
    return Number(m[1]);
}

/** Resource ID of a volume: `<host>/<pool>/<volume>` (what `egress gc` matches against state). */
export function volumeId(host: string, pool: string, name: string): string {
    return `${host}/${pool}/${name}`;
}

/**
 * Runs `fill` for a volume that was just created (or is being uploaded); if it throws, the volume is
 * deleted before the error propagates, so a failed `create` leaves nothing behind.
 */
export async function withNewVolume<T>(virsh: Virsh, pool: string, name: string, fill: () => Promise<T>): Promise<T> {
    try {
        return await fill();
    } catch (e) {
        await deleteVolume(virsh, pool, name).catch(() => undefined);
        throw e;
    }
}
