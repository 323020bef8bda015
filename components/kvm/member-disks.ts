/**
 * A KVM member's two volumes, made from its pool's template (member-template.ts): the qcow2 overlay on
 * the base image and the NoCloud seed ISO. Their names are the ones the earlier per-volume resources
 * (overlay.ts, seed-disk.ts) gave them, so a member handed over from such a stack is found on its disks.
 */
import { decodeUserData } from "../../src/model/cloud-init";
import { domainState, Virsh, volumePath, withTempDir } from "./libvirt";
import { discoverAddress } from "./address";
import type { KvmTemplate } from "./member-template";
import { overlayVolumeName, seedVolumeName } from "./naming";
import { buildSeedIso, SeedContent, seedDigest } from "./seed-iso";
import { clearLeftoverVolume, uploadInto, uploadTargetXml, withNewVolume } from "./volumes";
import { overlayXml } from "./xml";

/** Where a member's disks are: the storage pool and the two volume names. */
export interface MemberDisks {
    pool: string;
    overlay: string;
    seed: string;
}

/** The seed's content for member `name` (its domain `domain`), and the 8-hex tag of it in the volume name. */
function seedOf(tpl: KvmTemplate, name: string, domain: string): { content: SeedContent; tag: string } {
    const s = tpl.seed;
    const content = {
        userData: decodeUserData({ userData: s.userData, encoding: s.userDataEncoding }),
        hostname: name,
        installGuestAgent: s.installGuestAgent,
        vendorData: s.vendorData,
    };
    const tag = seedDigest({ ...content, instanceId: "" }).slice(0, 8);
    return { content: { ...content, instanceId: `${domain}-${tag}` }, tag };
}

/** The member's volume names. */
export function memberDisksOf(tpl: KvmTemplate, name: string, domain: string): MemberDisks {
    return {
        pool: tpl.storagePool,
        overlay: overlayVolumeName(domain, tpl.base.volume),
        seed: seedVolumeName(domain, seedOf(tpl, name, domain).tag),
    };
}

/**
 * Makes the overlay and the seed, then runs `boot` with their paths. If anything fails, both volumes go
 * before the error propagates. A volume of either name already there is removed only when no domain
 * uses it (a leftover of an interrupted create: clearLeftoverVolume).
 */
export async function makeMemberDisks<T>(
    virsh: Virsh,
    spec: { tpl: KvmTemplate; name: string; domain: string },
    disks: MemberDisks,
    boot: (paths: { overlay: string; seed: string }) => Promise<T>,
): Promise<T> {
    const { tpl, name, domain } = spec;
    const base = tpl.base;
    const { content } = seedOf(tpl, name, domain);
    return withTempDir("egress-seed-", async (dir) => {
        const iso = await buildSeedIso(content, dir); // fails before touching the host when no ISO tool exists
        await clearLeftoverVolume(virsh, disks.pool, disks.overlay, `overlay ${disks.overlay}`);
        await clearLeftoverVolume(virsh, disks.pool, disks.seed, `seed ${disks.seed}`);
        const overlayDoc = overlayXml(disks.overlay, base.capacityBytes, base.path, base.format);
        return withNewVolume(virsh, disks.pool, disks.overlay, overlayDoc, (overlay) =>
            withNewVolume(virsh, disks.pool, disks.seed, uploadTargetXml(disks.seed, iso), async (seed) => {
                await uploadInto(virsh, disks.pool, disks.seed, iso);
                return boot({ overlay, seed });
            }),
        );
    });
}

/**
 * The address of `domain` when it can be adopted as it runs: running, with the template's vCPUs and
 * memory, on exactly this member's two volumes (so made from the same base and seed content). Undefined
 * otherwise: the caller replaces it. Firmware and network are not compared (a change of either with the
 * upgrade that hands the member over is applied at its next replacement).
 */
export async function adoptableDomain(
    virsh: Virsh,
    domain: string,
    disks: MemberDisks,
    tpl: KvmTemplate,
): Promise<string | undefined> {
    if ((await domainState(virsh, domain)) !== "running") return undefined;
    // The machine type too (the disks' names say nothing of it): another is a replace, not an adoption.
    const info = await virsh(["dominfo", domain]);
    const cpus = Number(/^CPU\(s\):\s+(\d+)/m.exec(info)?.[1]);
    const kib = Number(/^Max memory:\s+(\d+) KiB/m.exec(info)?.[1]);
    if (cpus !== tpl.domain.vcpu || kib !== tpl.domain.memoryMiB * 1024) return undefined;
    const overlay = await volumePath(virsh, disks.pool, disks.overlay);
    const seed = await volumePath(virsh, disks.pool, disks.seed);
    if (!overlay || !seed) return undefined;
    const used = (await virsh(["domblklist", "--details", domain]))
        .split("\n")
        .map((l) => l.trim().split(/\s+/).slice(3).join(" "))
        .filter((p) => p.startsWith("/")); // sources only (no header, no empty drive)
    if (used.length !== 2 || !used.includes(overlay) || !used.includes(seed)) return undefined;
    return (await discoverAddress(virsh, domain).catch(() => undefined)) ?? "";
}
