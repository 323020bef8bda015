/**
 * What the member provider (member-provider.ts) does on the cluster: reads its pool's template, applies a
 * member's Deployment and Service, adopts the objects an earlier release handed over, and removes them.
 */
import * as crypto from "node:crypto";
import { KubeApiError, KubeClient, labelSelector } from "./api";
import {
    deploymentOf,
    MEMBER_TEMPLATE_KEY,
    memberPaths,
    MemberRef,
    MemberSpec,
    MemberTemplate,
    podLabels,
    serviceOf,
    specOf,
} from "./member-manifest";
import { awaitRollout, awaitServiceHost } from "./rollout";

/** Annotation on the objects of a member whose state an earlier release kept: the next create takes them over. */
export const ADOPT_ANNOTATION = "egress.dev/adopt";

/** Where a member's objects are: one name for both, unless an earlier release named them (handed over). */
export interface MemberObjects {
    namespace: string;
    deployment: string;
    service: string;
}

/**
 * The member resource's ID: `<namespace>/<name>`; with a Service named apart, `<ns>/<deployment>,<ns>/<service>`
 * (`egress gc` knows each object state holds by the IDs in state: src/gc/known-to-state.ts).
 */
export function memberId(o: MemberObjects): string {
    const d = `${o.namespace}/${o.deployment}`;
    return o.service === o.deployment ? d : `${d},${o.namespace}/${o.service}`;
}

/** The objects a member resource's ID names (memberId's inverse). */
export function objectsOf(id: string): MemberObjects {
    const [d, s = d] = id.split(",");
    const [namespace, deployment] = d.split("/");
    return { namespace, deployment, service: s.slice(s.indexOf("/") + 1) };
}

/** `<member>-<7 random [a-z0-9]>`, a DNS-1035 label as Services need (member ids start with a letter). */
export function newName(member: string): string {
    const tail = Array.from(crypto.randomBytes(7), (b) => "abcdefghijklmnopqrstuvwxyz0123456789"[b % 36]).join("");
    return `${member.slice(0, 55)}-${tail}`;
}

/** The member's full spec: its pool's template, read from the pool's members ConfigMap, with its own part applied. */
export async function readSpec(client: KubeClient, ref: MemberRef): Promise<MemberSpec> {
    const [ns, name] = ref.tpl.split("/");
    const map = await client.get(`/api/v1/namespaces/${encodeURIComponent(ns)}/configmaps/${encodeURIComponent(name)}`);
    const text = map?.data?.[MEMBER_TEMPLATE_KEY];
    if (typeof text !== "string")
        throw new Error(`ConfigMap ${ref.tpl} has no ${MEMBER_TEMPLATE_KEY}: run a plain \`egress up\``);
    return specOf(JSON.parse(text) as MemberTemplate, ref);
}

/**
 * The objects an earlier release handed over for this member (ADOPT_ANNOTATION, hand-over.ts), if any: found
 * by its pod labels, which every release put on them (a release before installation ids left that label out).
 * One of the two may be gone (deleted behind egress's back): the one left is adopted, the other made anew.
 */
export async function handedOver(client: KubeClient, spec: MemberSpec): Promise<Partial<MemberObjects>> {
    const ns = encodeURIComponent(spec.namespace);
    const marked = async (collection: string) =>
        (await client.get<{ items: any[] }>(collection, { labelSelector: labelSelector(podLabels(spec)) })).items.find(
            (o) => o.metadata?.annotations?.[ADOPT_ANNOTATION] !== undefined,
        )?.metadata.name as string | undefined;
    const deployment = await marked(`/apis/apps/v1/namespaces/${ns}/deployments`);
    const service = await marked(`/api/v1/namespaces/${ns}/services`);
    return { ...(deployment ? { deployment } : {}), ...(service ? { service } : {}) };
}

/** Applies both objects and waits for the rollout; answers a LoadBalancer's address (undefined for other types). */
export async function applyObjects(
    client: KubeClient,
    spec: MemberSpec,
    o: MemberObjects,
): Promise<string | undefined> {
    const { deployment, service } = paths(o);
    await client.apply(deployment, deploymentOf(spec, o.deployment));
    await client.apply(service, serviceOf(spec, o.service));
    await awaitRollout(client, deployment, spec);
    return spec.serviceType === "LoadBalancer" ? awaitServiceHost(client, service) : undefined;
}

/** Takes the hand-over mark off adopted objects: a later replacement of the member must not adopt them again. */
export async function unmark(client: KubeClient, o: MemberObjects): Promise<void> {
    const unset = { metadata: { annotations: { [ADOPT_ANNOTATION]: null } } };
    await client.mergePatch(paths(o).deployment, unset);
    await client.mergePatch(paths(o).service, unset);
}

/** True when the member's Deployment exists. */
export async function objectsExist(client: KubeClient, o: MemberObjects): Promise<boolean> {
    try {
        await client.get(paths(o).deployment);
        return true;
    } catch (e) {
        if (e instanceof KubeApiError && e.status === 404) return false;
        throw e;
    }
}

/** Deletes both objects and waits until the Deployment is gone (its pods follow in the background). */
export async function removeObjects(client: KubeClient, o: MemberObjects): Promise<void> {
    await client.delete(paths(o).service);
    await client.delete(paths(o).deployment);
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
        if (!(await objectsExist(client, o))) return;
        await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`Deployment ${o.namespace}/${o.deployment} was not gone 120 s after its deletion`);
}

function paths(o: MemberObjects): { deployment: string; service: string } {
    return {
        deployment: memberPaths(o.namespace, o.deployment).deployment,
        service: memberPaths(o.namespace, o.service).service,
    };
}
