/**
 * One KVM member as one dynamic resource (issue 33), where it was three (overlay, seed disk, domain), each
 * keeping the host's connection and SSH key in its inputs and outputs: 11.4 KB of state per member. State
 * keeps the member's name, its host (entry and host names) and its pool's template volume
 * (member-template.ts) as inputs; as outputs, for a delete, the connection without the key, and a digest
 * of the inputs for the diff. The key comes from the stack's
 * config (stack-config.ts).
 *
 * - create reads the template on the host, makes the overlay and the seed ISO, defines and starts the
 *   domain and waits for its address. A failure removes what it made. A running domain of this member,
 *   on exactly these disks, is adopted: what a stack made by an earlier release handed over (hand-over.ts).
 * - A new template, host or entry replaces the member (delete first: the domain's name is the member's);
 *   so does a read that found the domain gone, as with the local kind.
 * - update only refreshes the connection and looks once for a still-unknown address.
 */
import * as pulumi from "@pulumi/pulumi";
import { dynamicType, LoadedDynamicResource } from "../shared/dynamic";
import { REPAIR_REPLACE_KEY } from "../kind";
import { discoverAddress } from "./address";
import { defineAndStart, ownDomainExists, removeDomain } from "./domain";
import { domainState, GONE_STATES, isNotFound, KvmConnection, LibvirtError, withLibvirt } from "./libvirt";
import { explainUnreachableDelete } from "./unreachable";
import { deleteVolume } from "./volumes";
import { configureKvm, hostSession, HostRef, keyFor } from "./stack-config";
import { memberOfDomain } from "./naming";
import { adoptableDomain, makeMemberDisks, MemberDisks, memberDisksOf } from "./member-disks";
import { KvmTemplate, readTemplate, templateDigest } from "./member-template";
import type { MemberMetadata } from "./xml";

/** Type token of the member resource. */
export const KVM_MEMBER_TYPE = dynamicType("egress", "kvm:Member");

/** One input (each has its entry in state's dependency map): the member's own part. */
export interface KvmMemberInputs {
    member: HostRef & {
        name: string;
        /** Its pool's template volume on the host. */
        tpl: string;
        /** Seconds create waits for the address (the entry's addressTimeoutSeconds). */
        wait: number;
    };
}

/**
 * Kept few: state holds these per member. The domain and its disks are named by the ID (memberId), which
 * is also what `egress gc` matches against.
 */
export interface KvmMemberOutputs {
    /** The provider entry (its key, from config, reaches the host). */
    entry: string;
    /** Where the host is, without the key: a delete must reach a host config no longer lists. */
    conn: KvmConnection;
    /** Of the inputs but `wait`: another is a replace (a new template, host, entry or name). */
    digest: string;
    wait: number;
    /** The guest's address, "" until known. */
    ip: string;
    /** Set once a read found the domain missing or stopped: the next `up` replaces the member. */
    gone?: true;
}

/** `<host>/<domain>,<pool>/<overlay>,<pool>/<seed>`: what the member is on its host (src/gc/known-to-state.ts reads it). */
function memberId(host: string, domain: string, d: MemberDisks): string {
    return `${host}/${domain},${d.pool}/${d.overlay},${d.pool}/${d.seed}`;
}

/** The domain and the disks an ID names (memberId). */
function partsOf(id: string): { domain: string; disks: MemberDisks } {
    const [dom, overlay, seed] = id.split(",");
    const after = (s: string) => s.slice(s.indexOf("/") + 1);
    return { domain: after(dom), disks: { pool: overlay.split("/")[0], overlay: after(overlay), seed: after(seed) } };
}

const domainOf = (id: string) => partsOf(id).domain;
/** The member's name, from its domain's. */
const memberOf = (id: string) => memberOfDomain(domainOf(id));
/** What of the inputs makes another member: all of them but the address wait. */
const digestOf = (i: KvmMemberInputs) =>
    templateDigest({ entry: i.member.entry, host: i.member.host, name: i.member.name, tpl: i.member.tpl });
const refOf = (i: KvmMemberInputs): HostRef => ({ entry: i.member.entry, host: i.member.host });

export const kvmMemberProvider: pulumi.dynamic.ResourceProvider<KvmMemberInputs, KvmMemberOutputs> = {
    configure: configureKvm,

    async create(inputs) {
        const m = inputs.member;
        const { conn, privateKey, storagePool } = hostSession(refOf(inputs));
        return withLibvirt(
            conn,
            privateKey,
            async (virsh) => {
                const tpl = await readTemplate(virsh, storagePool, m.tpl);
                const domain = `${tpl.prefix}${m.name}`;
                const spec = { tpl, name: m.name, domain, conn, wait: m.wait };
                const disks = memberDisksOf(tpl, m.name, domain);
                const id = memberId(conn.host, domain, disks);
                const outs = (ip: string) => ({ entry: m.entry, conn, digest: digestOf(inputs), wait: m.wait, ip });
                if (await ownDomainExists(virsh, { name: domain, conn, ...metadataOf(spec) })) {
                    const adopted = await adoptableDomain(virsh, domain, disks, tpl);
                    if (adopted !== undefined) return { id, outs: outs(adopted) };
                    await removeDomain(virsh, domain);
                }
                const ip = await makeMemberDisks(virsh, spec, disks, (paths) =>
                    defineAndStart(virsh, {
                        ...tpl.domain,
                        name: domain,
                        metadata: metadataOf(spec).metadata,
                        overlayPath: paths.overlay,
                        seedPath: paths.seed,
                        conn,
                        addressTimeoutSeconds: m.wait,
                    }),
                );
                return { id, outs: outs(ip) };
            },
            { member: m.name },
        );
    },

    async read(id, props) {
        const p = { ...props } as KvmMemberOutputs;
        delete p.gone;
        return withLibvirt(
            p.conn,
            keyFor(p.entry, p.conn),
            async (virsh) => {
                // A host we cannot reach throws here: it says nothing about its guests.
                const state = await domainState(virsh, domainOf(id));
                if (GONE_STATES.includes(state)) return { id, props: { ...p, gone: true as const } };
                try {
                    // An address that changed (a new DHCP lease) replaces the old one.
                    return { id, props: { ...p, ip: (await discoverAddress(virsh, domainOf(id))) ?? p.ip } };
                } catch (e) {
                    if (isNotFound(e)) return { id, props: { ...p, gone: true as const } };
                    // No session: the read fails. Anything else is one failed lookup, which keeps what state knew.
                    if (["key", "tcp", "host-key", "ssh-auth"].includes((e as LibvirtError).stage)) throw e;
                    return { id, props: p };
                }
            },
            { member: memberOf(id) },
        );
    },

    async diff(_id, olds, news) {
        const replaces = [
            ...(olds.digest !== digestOf(news) ? ["member"] : []),
            ...(olds.gone ? [REPAIR_REPLACE_KEY] : []),
        ];
        // An address still unknown, or another connection in config, is an update (one quick look, no wait).
        let connChanged = false;
        try {
            connChanged = JSON.stringify(hostSession(refOf(news)).conn) !== JSON.stringify(olds.conn);
        } catch {
            /* the host is gone from config: create says so, if it comes to that */
        }
        return {
            changes: replaces.length > 0 || !olds.ip || connChanged || olds.wait !== news.member.wait,
            replaces,
            deleteBeforeReplace: true,
        };
    },

    async update(id, olds, news) {
        const { conn, privateKey } = hostSession(refOf(news));
        let ip = olds.ip;
        if (!ip)
            ip =
                (await withLibvirt(conn, privateKey, (virsh) => discoverAddress(virsh, domainOf(id)), {
                    member: news.member.name,
                }).catch(() => undefined)) ?? "";
        return { outs: { ...olds, conn, ip, wait: news.member.wait } };
    },

    async delete(id, props) {
        const member = memberOf(id);
        await withLibvirt(
            props.conn,
            keyFor(props.entry, props.conn),
            async (virsh) => {
                const { domain, disks } = partsOf(id);
                await removeDomain(virsh, domain);
                for (const v of [disks.overlay, disks.seed]) await deleteVolume(virsh, disks.pool, v);
            },
            { member },
        ).catch((e) => {
            throw explainUnreachableDelete(e, `domain ${domainOf(id)}`, member);
        });
    },
};

/** The domain's egress metadata for member `name` of the template's pool. */
function metadataOf(spec: { tpl: KvmTemplate; name: string }): { metadata: MemberMetadata; metadataNs: string } {
    return { metadata: { ...spec.tpl.domain.metadata, member: spec.name }, metadataNs: spec.tpl.domain.metadataNs };
}

/** One KVM member: its domain and its two disks, kept in state as its own part. */
export class KvmMember extends LoadedDynamicResource {
    declare public readonly ip: pulumi.Output<string>;

    constructor(
        name: string,
        args: { [K in keyof KvmMemberInputs]: pulumi.Input<KvmMemberInputs[K]> },
        opts?: pulumi.CustomResourceOptions,
    ) {
        super(
            KVM_MEMBER_TYPE,
            name,
            {
                ...args,
                entry: undefined,
                conn: undefined,
                digest: undefined,
                wait: undefined,
                ip: undefined,
                gone: undefined,
            },
            opts,
        );
    }
}
