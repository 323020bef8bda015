import { DOMAIN_TYPE, removeDomain } from "./domain";
import type { DomainInputs } from "./domain";
import { domainState, KvmConnection, volumePath, withLibvirt } from "./libvirt";
import { clearLeftoverVolume } from "./volumes";
import { BASE_IMAGE_TYPE, BaseImageInputs, clearOurUnfinishedUpload } from "./base-image";
import { OVERLAY_TYPE } from "./overlay";
import { SEED_DISK_TYPE } from "./seed-disk";
import { METADATA_NS } from "./naming";
import { parseMetadata } from "./xml";
import { ForeignInstallationError, ownedBy, type Installation } from "../../src/model/installation";

/**
 * Undoes a Domain create a killed engine run never recorded: the domain name is deterministic
 * (naming.ts memberObjectNames), and the domain is that create's only when its egress metadata names
 * this member and this installation; anything else under the name (another installation's member with
 * the same stack name, a domain made by hand) stays and is reported. Recovery runs undos in reverse
 * start order, so the member's volumes are freed before their undo.
 */
async function undoDomain(inputs: Record<string, unknown>, installation: Installation): Promise<string[]> {
    const { name, conn, privateKey, metadata, metadataNs } = inputs as Partial<DomainInputs>;
    if (typeof name !== "string" || !conn) return [];
    return withLibvirt(conn, privateKey, async (virsh) => {
        const state = await domainState(virsh, name);
        if (state === "missing") return [];
        // A create killed before `define` finished leaves no domain; one killed after it left our metadata.
        const xml = await virsh(["metadata", name, "--uri", metadataNs ?? METADATA_NS, "--config"]).catch(() => "");
        const found = parseMetadata(xml, metadataNs ?? METADATA_NS);
        const sameMember =
            !!found &&
            (!metadata ||
                (found.project === metadata.project &&
                    found.stack === metadata.stack &&
                    found.member === metadata.member));
        if (!sameMember || !ownedBy(found!.installation, installation))
            throw new ForeignInstallationError(
                `domain ${name} (${state}) on ${conn.host}`,
                installation.id,
                found?.installation,
            );
        await removeDomain(virsh, name);
        return [`removed domain ${name} (${state}) on ${conn.host}`];
    });
}

/** Undoes an Overlay or SeedDisk create: the volume of that (deterministic) name, unless a domain uses it. */
async function undoVolume(inputs: Record<string, unknown>): Promise<string[]> {
    const { conn, privateKey, storagePool, volume } = inputs as {
        conn?: KvmConnection;
        privateKey?: string;
        storagePool?: string;
        volume?: string;
    };
    if (!conn || typeof storagePool !== "string" || typeof volume !== "string") return [];
    return withLibvirt(conn, privateKey, async (virsh) => {
        if (!(await volumePath(virsh, storagePool, volume))) return [];
        await clearLeftoverVolume(virsh, storagePool, volume, `volume ${volume}`);
        return [`removed volume ${volume} from pool ${storagePool} on ${conn.host}`];
    });
}

/**
 * Undoes a BaseImage create a killed run never recorded (e.g. SIGKILL mid-`vol-upload`): the base is
 * shared, so only an upload carrying our marker is ours, and it is removed only while unverified and
 * unused (clearOurUnfinishedUpload); a verified one is kept for the next `up` to adopt.
 */
async function undoBaseImage(inputs: Record<string, unknown>): Promise<string[]> {
    const i = inputs as Partial<BaseImageInputs>;
    if (!i.conn || typeof i.storagePool !== "string" || typeof i.volume !== "string" || typeof i.sha256 !== "string")
        return [];
    const conn = i.conn;
    return withLibvirt(conn, i.privateKey, (virsh) => clearOurUnfinishedUpload(virsh, i as BaseImageInputs, conn.host));
}

/** The KVM kind's pending-create undos, by resource type (components/registry.ts). */
export const kvmPendingCreateUndo = {
    [BASE_IMAGE_TYPE]: undoBaseImage,
    [DOMAIN_TYPE]: undoDomain,
    [OVERLAY_TYPE]: undoVolume,
    [SEED_DISK_TYPE]: undoVolume,
};
