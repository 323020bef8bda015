/**
 * The Compute Engine calls behind one GCE member resource (member-provider.ts): an instance made from its
 * pool's instance template (pool-templates.ts) with the member's own name, labels and, when it needs one,
 * network interface; found, adopted, relabelled and removed by name. Plain REST (api.ts), no client library.
 */
import { randomBytes } from "node:crypto";
import { GcpApiError, GcpComputeClient } from "./api";
import { GCE_GONE_STATUSES } from "./gone";
import { INSTALLATION_LABEL, MEMBER_LABEL, memberLabelValue } from "../../src/model";

/** The label a hand-over (hand-over.ts) puts on an earlier release's instance for its member to adopt. */
export const ADOPT_LABEL = "egress-adopt";

/** What a member is, as its inputs keep it: the rest is its pool's template's. */
export interface GcpMemberRef {
    project: string;
    zone: string;
    /** The member's name (`<pool>-<index>`): its `egress-member` label and its instance's name prefix. */
    name: string;
    /** The instance template's name (global). */
    tpl: string;
    /** The member's own network interface, when it has one (a static address), as URLs GCE takes. */
    nic?: { network: string; subnetwork?: string; natIp?: string };
}

/** What a member's instance is made from: its template's properties that say so. */
export interface TemplateFacts {
    labels: Record<string, string>;
    machineType: string;
    userData?: string;
}

/** An instance as GCE answers it, in the parts a member reads. */
export interface InstanceFacts {
    name: string;
    status: string;
    labels: Record<string, string>;
    labelFingerprint?: string;
    machineType: string;
    userData?: string;
    ip?: string;
}

export const instancePath = (zone: string, name: string) => `zones/${zone}/instances/${name}`;

/** The resource ID: the same path the gcp provider gave an instance (`egress gc` knows it by its last part). */
export function memberId(project: string, zone: string, name: string): string {
    return `projects/${project}/${instancePath(zone, name)}`;
}

export function idParts(id: string): { project: string; zone: string; name: string } {
    const m = /^projects\/([^/]+)\/zones\/([^/]+)\/instances\/([^/]+)$/.exec(id);
    if (!m) throw new Error(`not a GCE member id: ${id}`);
    return { project: m[1], zone: m[2], name: m[3] };
}

/** A new instance name: the member's, then a random part (a replacement runs beside the one it replaces). */
export function newInstanceName(member: string): string {
    const base = member
        .toLowerCase()
        .replace(/[^a-z0-9-]/g, "-")
        .slice(0, 63 - 11);
    return `${base}-vm-${randomBytes(4).toString("hex").slice(0, 7)}`;
}

const metadataValue = (metadata: any, key: string): string | undefined =>
    (metadata?.items ?? []).find((i: any) => i?.key === key)?.value;

export async function readTemplateFacts(client: GcpComputeClient, tpl: string): Promise<TemplateFacts> {
    const t = await client.get(`global/instanceTemplates/${tpl}`).catch((e) => {
        if (!(e instanceof GcpApiError && e.status === 404)) throw e;
        throw new Error(
            `instance template ${tpl} does not exist (deleted outside egress?): \`egress up --refresh\` makes it again`,
        );
    });
    const p = t.properties ?? {};
    return {
        labels: p.labels ?? {},
        machineType: String(p.machineType ?? ""),
        userData: metadataValue(p.metadata, "user-data"),
    };
}

/** The instance, or undefined when GCE has none by that name. */
export async function readInstance(
    client: GcpComputeClient,
    zone: string,
    name: string,
): Promise<InstanceFacts | undefined> {
    try {
        return instanceFacts(await client.get(instancePath(zone, name)));
    } catch (e) {
        if (e instanceof GcpApiError && e.status === 404) return undefined;
        throw e;
    }
}

function instanceFacts(i: any): InstanceFacts {
    return {
        name: String(i.name),
        status: String(i.status),
        labels: i.labels ?? {},
        labelFingerprint: i.labelFingerprint,
        machineType: String(i.machineType ?? ""),
        userData: metadataValue(i.metadata, "user-data"),
        ip: i.networkInterfaces?.[0]?.accessConfigs?.[0]?.natIP,
    };
}

export const isGone = (i: InstanceFacts | undefined) => !i || GCE_GONE_STATUSES.includes(i.status);

/** The member's labels: its pool's (the template's) and its own name. */
export function memberLabelsOf(tpl: TemplateFacts, member: string): Record<string, string> {
    return { ...tpl.labels, [MEMBER_LABEL]: memberLabelValue({ id: member }) };
}

/** Makes the instance from the template; the body's fields override the template's. Returns it as made. */
export async function insertInstance(
    client: GcpComputeClient,
    ref: GcpMemberRef,
    name: string,
    labels: Record<string, string>,
): Promise<InstanceFacts> {
    const nic = ref.nic && {
        network: ref.nic.network,
        ...(ref.nic.subnetwork ? { subnetwork: ref.nic.subnetwork } : {}),
        accessConfigs: [ref.nic.natIp ? { natIP: ref.nic.natIp } : {}],
    };
    await client.post(
        `zones/${ref.zone}/instances`,
        { name, labels, ...(nic ? { networkInterfaces: [nic] } : {}) },
        { sourceInstanceTemplate: `global/instanceTemplates/${ref.tpl}` },
    );
    const made = await readInstance(client, ref.zone, name);
    if (!made) throw new Error(`GCE made instance ${name} in ${ref.zone} but does not find it`);
    return made;
}

/**
 * The instance an earlier release's stack handed over (hand-over.ts) to this member, if any: marked with
 * ADOPT_LABEL, carrying the member's, project's and stack's labels, and this installation's label or none
 * (a stack made before installation ids never labelled its instances; the mark says they are its own).
 */
export async function handedOverInstance(
    client: GcpComputeClient,
    ref: GcpMemberRef,
    labels: Record<string, string>,
): Promise<InstanceFacts | undefined> {
    const filter = [ADOPT_LABEL, MEMBER_LABEL, "egress-project", "egress-stack"]
        .map((k) => `(labels.${k} = "${k === ADOPT_LABEL ? "true" : labels[k]}")`)
        .join(" AND ");
    const found = await client.listAll(`zones/${ref.zone}/instances`, { filter });
    const ours = found.find(({ item }) =>
        [undefined, labels[INSTALLATION_LABEL]].includes(item.labels?.[INSTALLATION_LABEL]),
    );
    return ours ? instanceFacts(ours.item) : undefined;
}

/** Whether a handed-over instance is what the template would make now: else it is replaced, not adopted. */
export function adoptable(i: InstanceFacts, tpl: TemplateFacts): boolean {
    return !isGone(i) && i.machineType.endsWith(`/machineTypes/${tpl.machineType}`) && i.userData === tpl.userData;
}

/** Sets an instance's labels (all of them), as of its current fingerprint. */
export async function setLabels(
    client: GcpComputeClient,
    zone: string,
    name: string,
    labels: Record<string, string>,
): Promise<void> {
    const now = await readInstance(client, zone, name);
    if (!now) throw new Error(`GCE instance ${name} in ${zone} is gone`);
    await client.post(`${instancePath(zone, name)}/setLabels`, { labels, labelFingerprint: now.labelFingerprint });
}
