/**
 * One GCE member as one dynamic resource (issue 33): an instance made from its pool's instance template
 * (pool-templates.ts) by egress's own REST client (member-instance.ts). State keeps the member's own part
 * (project, zone, name, template, and a network interface only when it has its own) and the address,
 * where the gcp provider's Instance kept the cloud's whole object (labels four times, the user-data, disks,
 * scheduling, defaults). What a pool's members share is kept once, in the template.
 * The provider is the installed egress (components/shared/dynamic.ts).
 *
 * - create makes `<member>-vm-<random>` from the template, or adopts the instance an earlier release's
 *   stack handed over (hand-over.ts) when it is what the template makes; a failed create removes what it made.
 * - A changed template, zone or interface replaces the member (a new instance first, then the old goes);
 *   so does a refresh that found the instance gone or stopped (REPAIR_REPLACE_KEY).
 */
import { createHash } from "node:crypto";
import * as pulumi from "@pulumi/pulumi";
import { dynamicType, LoadedDynamicResource } from "../shared/dynamic";
import { REPAIR_REPLACE_KEY } from "../kind";
import { GcpComputeClient } from "./api";
import {
    adoptable,
    GcpMemberRef,
    handedOverInstance,
    idParts,
    insertInstance,
    instancePath,
    isGone,
    memberId,
    memberLabelsOf,
    newInstanceName,
    readInstance,
    readTemplateFacts,
    setLabels,
} from "./member-instance";

/** Type token of the member resource. */
export const GCP_MEMBER_TYPE = dynamicType("egress", "gcp:Member");

/** One input (each input has its entry in state's dependency map). */
export interface GcpMemberInputs {
    member: GcpMemberRef;
}

/** Kept few: state holds these per member. Project, zone and instance name are in the resource's ID. */
export interface GcpMemberOutputs {
    /** Of the inputs: another replaces the member. */
    digest: string;
    /** The external address. */
    ip?: string;
    /** Set once a refresh found the instance gone or stopped: the next `up` replaces the member. */
    gone?: true;
}

const digestOf = (i: GcpMemberInputs) =>
    createHash("sha256").update(JSON.stringify(i.member)).digest("hex").slice(0, 12);

const text = (v: unknown) => (typeof v === "string" && v ? v : undefined);

/** Credentials from the stack's config as the gcp provider reads them (`gcp:credentials`, `gcp:accessToken`), else the environment's. */
let configured: { accessToken?: string; credentials?: string } = {};

/** One client per project for half an hour: it fetches its access token once, and tokens live an hour. */
let clients: Record<string, { client: GcpComputeClient; until: number }> = {};
const CLIENT_LIFETIME_MS = 30 * 60_000;

export function clientFor(project: string, config = configured): GcpComputeClient {
    const cached = clients[project];
    if (cached && cached.until > Date.now() && config === configured) return cached.client;
    const env = { ...process.env, ...(config.credentials ? { GOOGLE_CREDENTIALS: config.credentials } : {}) };
    const client = new GcpComputeClient(project, {
        env,
        ...(config.accessToken ? { accessToken: config.accessToken } : {}),
    });
    if (config === configured) clients[project] = { client, until: Date.now() + CLIENT_LIFETIME_MS };
    return client;
}

/** What the stack config says of GCP credentials, as the gcp provider reads it. */
export function gcpCredentialsOf(get: (key: string) => unknown): { accessToken?: string; credentials?: string } {
    return { accessToken: text(get("gcp:accessToken")), credentials: text(get("gcp:credentials")) };
}

/** Makes the member's instance, or adopts the one handed over to it. Returns the instance's name and address. */
async function makeOrAdopt(client: GcpComputeClient, ref: GcpMemberRef): Promise<{ name: string; ip?: string }> {
    const tpl = await readTemplateFacts(client, ref.tpl);
    const labels = memberLabelsOf(tpl, ref.name);
    const old = await handedOverInstance(client, ref, labels);
    if (old && adoptable(old, tpl)) {
        await setLabels(client, ref.zone, old.name, labels); // the adopt mark goes with the old labels
        return { name: old.name, ip: old.ip };
    }
    // Handed over but not what the template makes now (another machine type, new user-data): replaced.
    // A static address serves one instance at a time: the old one gives it up first.
    if (old && ref.nic?.natIp) await client.delete(instancePath(ref.zone, old.name));
    const made = await makeInstance(client, ref, labels);
    // Best effort: a leftover keeps its labels, and `egress gc` finds it.
    if (old && !ref.nic?.natIp) await client.delete(instancePath(ref.zone, old.name)).catch(() => undefined);
    return made;
}

/** Inserts the member's instance; a failed insert removes what it made (the reason is in the error). */
async function makeInstance(
    client: GcpComputeClient,
    ref: GcpMemberRef,
    labels: Record<string, string>,
): Promise<{ name: string; ip?: string }> {
    const name = newInstanceName(ref.name);
    try {
        return { name, ip: (await insertInstance(client, ref, name, labels)).ip };
    } catch (e) {
        await client.delete(instancePath(ref.zone, name)).catch(() => undefined);
        throw e;
    }
}

export const gcpMemberProvider: pulumi.dynamic.ResourceProvider<GcpMemberInputs, GcpMemberOutputs> = {
    async configure(req) {
        configured = gcpCredentialsOf((k) => req.config.get(k));
        clients = {};
    },

    async create(inputs) {
        const ref = inputs.member;
        const { name, ip } = await makeOrAdopt(clientFor(ref.project), ref);
        return { id: memberId(ref.project, ref.zone, name), outs: { digest: digestOf(inputs), ...(ip ? { ip } : {}) } };
    },

    async read(id, props) {
        const { gone: _, ...p } = props as GcpMemberOutputs;
        const { project, zone, name } = idParts(id);
        const now = await readInstance(clientFor(project), zone, name);
        if (isGone(now)) return { id, props: { ...p, gone: true as const } };
        // An ephemeral address that changed (a stop and start) replaces the old one.
        return { id, props: { ...p, ...(now!.ip ? { ip: now!.ip } : {}) } };
    },

    async diff(_id, olds, news) {
        const replaces = [
            ...(olds.digest !== digestOf(news) ? ["member"] : []),
            ...(olds.gone ? [REPAIR_REPLACE_KEY] : []),
        ];
        return { changes: replaces.length > 0, replaces };
    },

    async delete(id) {
        const { project, zone, name } = idParts(id);
        await clientFor(project).delete(instancePath(zone, name));
    },
};

/** One member's instance, kept in state as its own part. */
export class GcpMember extends LoadedDynamicResource {
    declare public readonly ip: pulumi.Output<string | undefined>;

    constructor(
        name: string,
        args: { [K in keyof GcpMemberInputs]: pulumi.Input<GcpMemberInputs[K]> },
        opts?: pulumi.CustomResourceOptions,
    ) {
        super(GCP_MEMBER_TYPE, name, { ...args, digest: undefined, ip: undefined, gone: undefined }, opts);
    }
}
