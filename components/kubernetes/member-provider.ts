/**
 * One Kubernetes member as one dynamic resource (issue 33): its Deployment and Service are applied through
 * the API server by egress's own REST client, and state keeps only the member's compact spec and a few
 * outputs (about 1 KB), not the two live objects @pulumi/kubernetes kept (14 KB: managed fields, defaults,
 * status, last inputs). The provider is the installed egress (components/shared/dynamic.ts).
 *
 * - create applies both objects under a new name (`<member>-<7 random>`, as Pulumi named them), or adopts
 *   the objects a stack made by an earlier release handed over (ADOPT_ANNOTATION, src/engine/kube-adopt.ts),
 *   and waits for the rollout. A failed create removes what it made.
 * - update applies the new spec to the same objects: a new pod template rolls the pod (maxSurge 1).
 * - A changed namespace, context or pod selector replaces the member; a refresh that finds the Deployment
 *   gone marks it so, and the next `up` replaces it.
 */
import * as crypto from "node:crypto";
import * as pulumi from "@pulumi/pulumi";
import { dynamicType, LoadedDynamicResource } from "../shared/dynamic";
import { KubeApiError, KubeClient, labelSelector } from "./api";
import { deploymentOf, memberPaths, MemberSpec, podLabels, serviceOf } from "./member-manifest";
import { awaitRollout, awaitServiceHost } from "./rollout";

/** Type token of the member resource. */
export const KUBE_MEMBER_TYPE = dynamicType("egress", "kubernetes:Member");

/** Annotation on the objects of a member whose state an earlier release kept: the next create takes them over. */
export const ADOPT_ANNOTATION = "egress.dev/adopt";

/** Where the cluster is: the provider entry's kubeconfig and context (unset: as kubectl finds them). */
export interface ClusterRef {
    kubeconfigPath?: string;
    context?: string;
}

export interface KubeMemberInputs {
    cluster: ClusterRef;
    /** The member's id: the objects' names start with it. */
    member: string;
    spec: MemberSpec;
    /** For the member's host, `<service>.<namespace>.svc.<clusterDomain>`. */
    clusterDomain: string;
}

export interface KubeMemberOutputs {
    cluster: ClusterRef;
    namespace: string;
    /** The Deployment's name, and the Service's unless `service` says otherwise. */
    name: string;
    /** The Service's name, when an earlier release named it apart from the Deployment (hand-over.ts). */
    service?: string;
    host: string;
    /** Digest of the inputs: a different one is an update. */
    digest: string;
    /** Digest of what cannot change in place (namespace, context, pod selector): a different one replaces. */
    fixed: string;
    /** False once a refresh found the Deployment gone: the next `up` replaces the member. */
    present: boolean;
}

const digestOf = (v: unknown) => crypto.createHash("sha256").update(JSON.stringify(v)).digest("hex").slice(0, 16);
const fixedOf = (i: KubeMemberInputs) => digestOf([i.cluster.context ?? null, i.spec.namespace, podLabels(i.spec)]);
const clientOf = (c: ClusterRef) => KubeClient.forEntry(c);
const namesOf = (o: KubeMemberOutputs): Names => ({ deployment: o.name, service: o.service ?? o.name });

/** `<member>-<7 random [a-z0-9]>`, a DNS-1035 label as Services need (member ids start with a letter). */
function newName(member: string): string {
    const tail = Array.from(crypto.randomBytes(7), (b) => "abcdefghijklmnopqrstuvwxyz0123456789"[b % 36]).join("");
    return `${member.slice(0, 55)}-${tail}`;
}

/** The names of a member's two objects: one, unless an earlier release named them (handed over). */
interface Names {
    deployment: string;
    service: string;
}

/**
 * The objects an earlier release handed over for this member (ADOPT_ANNOTATION, hand-over.ts), if any: found
 * by its pod labels, which every release put on them (a release before installation ids left that label out).
 */
async function handedOver(client: KubeClient, spec: MemberSpec): Promise<Names | undefined> {
    const marked = async (collection: string) =>
        (
            await client.get<{ items: any[] }>(`${collection}`, { labelSelector: labelSelector(podLabels(spec)) })
        ).items.find((o) => o.metadata?.annotations?.[ADOPT_ANNOTATION] !== undefined)?.metadata.name as
            string | undefined;
    const ns = encodeURIComponent(spec.namespace);
    const deployment = await marked(`/apis/apps/v1/namespaces/${ns}/deployments`);
    const service = await marked(`/api/v1/namespaces/${ns}/services`);
    return deployment && service ? { deployment, service } : undefined;
}

/**
 * `<namespace>/<name>`; with a Service named apart, `<ns>/<deployment>,<ns>/<service>`: `egress gc` knows
 * each object state holds by the IDs in state (src/gc/known-to-state.ts).
 */
function memberId(namespace: string, names: Names): string {
    const d = `${namespace}/${names.deployment}`;
    return names.service === names.deployment ? d : `${d},${namespace}/${names.service}`;
}

/** Applies both objects and waits until the pod is rolled out and the Service has its address. */
async function applyMember(client: KubeClient, i: KubeMemberInputs, names: Names): Promise<string> {
    const d = memberPaths(i.spec.namespace, names.deployment).deployment;
    const s = memberPaths(i.spec.namespace, names.service).service;
    await client.apply(d, deploymentOf(i.spec, names.deployment));
    await client.apply(s, serviceOf(i.spec, names.service));
    await awaitRollout(client, d, i.spec);
    return awaitServiceHost(
        client,
        s,
        i.spec.serviceType,
        `${names.service}.${i.spec.namespace}.svc.${i.clusterDomain}`,
    );
}

/** Takes the hand-over mark off adopted objects: a later replacement of the member must not adopt them again. */
async function unmark(client: KubeClient, namespace: string, names: Names): Promise<void> {
    const unset = { metadata: { annotations: { [ADOPT_ANNOTATION]: null } } };
    await client.mergePatch(memberPaths(namespace, names.deployment).deployment, unset);
    await client.mergePatch(memberPaths(namespace, names.service).service, unset);
}

/** Deletes both objects and waits until the Deployment is gone (its pods follow in the background). */
async function removeMember(client: KubeClient, namespace: string, names: Names): Promise<void> {
    const paths = {
        service: memberPaths(namespace, names.service).service,
        deployment: memberPaths(namespace, names.deployment).deployment,
    };
    const name = names.deployment;
    await client.delete(paths.service);
    await client.delete(paths.deployment);
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
        try {
            await client.get(paths.deployment);
        } catch (e) {
            if (e instanceof KubeApiError && e.status === 404) return;
            throw e;
        }
        await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`Deployment ${namespace}/${name} was not gone 120 s after its deletion`);
}

function outputs(i: KubeMemberInputs, names: Names, host: string): KubeMemberOutputs {
    return {
        cluster: i.cluster,
        namespace: i.spec.namespace,
        name: names.deployment,
        ...(names.service !== names.deployment ? { service: names.service } : {}),
        host,
        digest: digestOf(i),
        fixed: fixedOf(i),
        present: true,
    };
}

export const kubeMemberProvider: pulumi.dynamic.ResourceProvider<KubeMemberInputs, KubeMemberOutputs> = {
    async create(inputs) {
        const client = clientOf(inputs.cluster);
        const adopted = await handedOver(client, inputs.spec);
        const name = newName(inputs.member);
        const names = adopted ?? { deployment: name, service: name };
        try {
            const host = await applyMember(client, inputs, names);
            if (adopted) await unmark(client, inputs.spec.namespace, adopted);
            return { id: memberId(inputs.spec.namespace, names), outs: outputs(inputs, names, host) };
        } catch (e) {
            // Transactional: what this create made goes (the reason is in the error). Adopted objects stay.
            if (!adopted) await removeMember(client, inputs.spec.namespace, names).catch(() => undefined);
            throw e;
        }
    },

    async read(id, props) {
        const p = props as KubeMemberOutputs;
        try {
            await clientOf(p.cluster).get(memberPaths(p.namespace, p.name).deployment);
            return { id, props: { ...p, present: true } };
        } catch (e) {
            if (e instanceof KubeApiError && e.status === 404) return { id, props: { ...p, present: false } };
            throw e;
        }
    },

    async diff(_id, olds, news) {
        const replaces = olds.fixed !== fixedOf(news) ? ["spec"] : olds.present === false ? ["present"] : [];
        return { changes: replaces.length > 0 || olds.digest !== digestOf(news), replaces };
    },

    async update(_id, olds, news) {
        const names = namesOf(olds);
        const host = await applyMember(clientOf(news.cluster), news, names);
        return { outs: outputs(news, names, host) };
    },

    async delete(_id, props) {
        await removeMember(clientOf(props.cluster), props.namespace, namesOf(props));
    },
};

/** One member's Deployment and Service, kept in state as its spec. */
export class KubeMember extends LoadedDynamicResource {
    declare public readonly host: pulumi.Output<string>;

    constructor(
        name: string,
        args: { [K in keyof KubeMemberInputs]: pulumi.Input<KubeMemberInputs[K]> },
        opts?: pulumi.CustomResourceOptions,
    ) {
        super(
            KUBE_MEMBER_TYPE,
            name,
            {
                ...args,
                namespace: undefined,
                name: undefined,
                host: undefined,
                digest: undefined,
                fixed: undefined,
                present: undefined,
            },
            opts,
        );
    }
}
