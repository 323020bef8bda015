import { DOMAIN_TYPE, removeDomain } from "./domain";
import type { DomainInputs } from "./domain";
import { domainState, KvmConnection, Virsh, volumePath, withLibvirt } from "./libvirt";
import { clearLeftoverVolume, deleteVolume } from "./volumes";
import { BASE_IMAGE_TYPE, BaseImageInputs, clearOurUnfinishedUpload } from "./base-image";
import { OVERLAY_TYPE } from "./overlay";
import { SEED_DISK_TYPE } from "./seed-disk";
import { installationPrefix, METADATA_NS } from "./naming";
import { MemberMetadata, parseMetadata } from "./xml";
import { KVM_MEMBER_TYPE, KvmMemberInputs } from "./member-provider";
import { readTemplate, TEMPLATE_TYPE, TemplateInputs } from "./member-template";
import { adoptableDomain, memberDisksOf } from "./member-disks";
import { hostSession } from "./stack-config";
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
    return withLibvirt(conn, privateKey, (virsh) =>
        undoDomainOn(virsh, conn.host, name, installation, metadata, metadataNs ?? METADATA_NS),
    );
}

/** Removes domain `name` when its metadata says it is this member's (`metadata`, when known) of this installation. */
async function undoDomainOn(
    virsh: Virsh,
    host: string,
    name: string,
    installation: Installation,
    metadata: Partial<MemberMetadata> | undefined,
    metadataNs: string,
): Promise<string[]> {
    const state = await domainState(virsh, name);
    if (state === "missing") return [];
    // A create killed before `define` finished leaves no domain; one killed after it left our metadata.
    const xml = await virsh(["metadata", name, "--uri", metadataNs, "--config"]).catch(() => "");
    const found = parseMetadata(xml, metadataNs);
    const sameMember =
        !!found &&
        (!metadata ||
            (found.project === metadata.project && found.stack === metadata.stack && found.member === metadata.member));
    if (!sameMember || !ownedBy(found!.installation, installation))
        throw new ForeignInstallationError(
            `domain ${name} (${state}) on ${host}`,
            installation.id,
            found?.installation,
        );
    await removeDomain(virsh, name);
    return [`removed domain ${name} (${state}) on ${host}`];
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

/**
 * Undoes a member create (member-provider.ts): its domain, when it is this member's of this installation
 * (as undoDomain), then its two volumes, whose names its pool's template on the host gives. State keeps
 * no key for it: the stack's config does.
 */
async function undoMember(inputs: Record<string, unknown>, installation: Installation, providers?: string) {
    const m = (inputs as Partial<KvmMemberInputs>).member;
    if (!m || typeof m.name !== "string" || typeof m.tpl !== "string") return [];
    const { conn, privateKey, storagePool } = hostSession({ entry: m.entry, host: m.host }, providers);
    const domain = `${installationPrefix(installation.id)}${m.name}`;
    return withLibvirt(conn, privateKey, async (virsh) => {
        if (!(await volumePath(virsh, storagePool, m.tpl)))
            return undoDomainOn(virsh, conn.host, domain, installation, undefined, METADATA_NS);
        const tpl = await readTemplate(virsh, storagePool, m.tpl);
        const disks = memberDisksOf(tpl, m.name, domain);
        // A running domain the next create would adopt (a hand-over's, or one this create finished) stays:
        // undoing it would stop a guest the upgrade promised never to restart.
        // (Its address, "" while unknown, or undefined when it cannot be adopted.)
        if ((await adoptableDomain(virsh, domain, disks, tpl).catch(() => undefined)) !== undefined)
            return [`kept domain ${domain} on ${conn.host}: it runs on its own disks, and the next create adopts it`];
        const done = await undoDomainOn(virsh, conn.host, domain, installation, undefined, METADATA_NS);
        for (const v of [disks.overlay, disks.seed]) {
            if (!(await volumePath(virsh, disks.pool, v))) continue;
            await clearLeftoverVolume(virsh, disks.pool, v, `volume ${v}`);
            done.push(`removed volume ${v} from pool ${disks.pool} on ${conn.host}`);
        }
        return done;
    });
}

/** Undoes a template create: its volume, whose name (installation prefix, pool, digest) is only its own. */
async function undoTemplate(inputs: Record<string, unknown>, _installation: Installation, providers?: string) {
    const { at, volume } = inputs as Partial<TemplateInputs>;
    if (!at || typeof volume !== "string") return [];
    const { conn, privateKey, storagePool } = hostSession(at, providers);
    return withLibvirt(conn, privateKey, async (virsh) => {
        if (!(await volumePath(virsh, storagePool, volume))) return [];
        await deleteVolume(virsh, storagePool, volume);
        return [`removed member template ${volume} from pool ${storagePool} on ${conn.host}`];
    });
}

/** The KVM kind's pending-create undos, by resource type (components/registry.ts). */
export const kvmPendingCreateUndo = {
    [KVM_MEMBER_TYPE]: undoMember,
    [TEMPLATE_TYPE]: undoTemplate,
    [BASE_IMAGE_TYPE]: undoBaseImage,
    [DOMAIN_TYPE]: undoDomain,
    [OVERLAY_TYPE]: undoVolume,
    [SEED_DISK_TYPE]: undoVolume,
};
