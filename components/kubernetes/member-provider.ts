/**
 * One Kubernetes member as one dynamic resource (issue 33): its Deployment and Service are applied through
 * the API server by egress's own REST client (member-objects.ts). State keeps the member's own part (its
 * name, its pool's template, what it overrides) and a digest, where the two live objects @pulumi/kubernetes
 * kept took 14 KB (managed fields, defaults, status, last inputs). What a pool's members share is kept
 * once, in the pool's members ConfigMap (member-manifest.ts).
 * The provider is the installed egress (components/shared/dynamic.ts).
 *
 * - create applies both objects under a new name (`<member>-<7 random>`, as Pulumi named them), or adopts
 *   the objects a stack made by an earlier release handed over (hand-over.ts), and waits for the rollout.
 *   A failed create removes what it made.
 * - update applies the new spec to the same objects: a new pod template rolls the pod (maxSurge 1).
 * - A changed namespace or context replaces the member; so does a refresh that found the Deployment gone.
 */
import * as pulumi from "@pulumi/pulumi";
import { dynamicType, LoadedDynamicResource } from "../shared/dynamic";
import { REPAIR_REPLACE_KEY } from "../kind";
import { KubeClient } from "./api";
import { digestOf, MemberRef } from "./member-manifest";
import {
    applyObjects,
    handedOver,
    memberId,
    MemberObjects,
    newName,
    objectsExist,
    objectsOf,
    readSpec,
    removeObjects,
    unmark,
} from "./member-objects";

export { ADOPT_ANNOTATION } from "./member-objects";

/** Type token of the member resource. */
export const KUBE_MEMBER_TYPE = dynamicType("egress", "kubernetes:Member");

/** Where the cluster is: the provider entry's kubeconfig and context (unset: as kubectl finds them). */
export interface ClusterRef {
    kubeconfigPath?: string;
    context?: string;
}

/** One input (each input has its entry in state's dependency map): the member's part, and its cluster. */
export interface KubeMemberInputs {
    member: MemberRef & { cluster: ClusterRef };
}

/** Kept few: state holds these per member. The objects' names are in the resource's ID (member-objects.ts memberId). */
export interface KubeMemberOutputs {
    cluster: ClusterRef;
    /** Of the inputs: another is an update (or a replace, see `diff`). */
    digest: string;
    /** A LoadBalancer's address; other members' host is their Service's DNS name (pod-proxy.ts). */
    host?: string;
    /** Set once a refresh found the Deployment gone: the next `up` replaces the member. */
    gone?: true;
}

const digestsOf = (i: KubeMemberInputs) => digestOf(i).slice(0, 12);
const clientOf = (c: ClusterRef) => KubeClient.forEntry(c);

function outputs(i: KubeMemberInputs, host: string | undefined): KubeMemberOutputs {
    return { cluster: i.member.cluster, digest: digestsOf(i), ...(host ? { host } : {}) };
}

export const kubeMemberProvider: pulumi.dynamic.ResourceProvider<KubeMemberInputs, KubeMemberOutputs> = {
    async create(inputs) {
        const client = clientOf(inputs.member.cluster);
        const spec = await readSpec(client, inputs.member);
        const adopted = await handedOver(client, spec);
        const name = newName(inputs.member.name);
        // What an earlier release handed over keeps its name; what is missing is made under the Deployment's.
        const deployment = adopted.deployment ?? name;
        const objects: MemberObjects = {
            namespace: spec.namespace,
            deployment,
            service: adopted.service ?? deployment,
        };
        const adopts = adopted.deployment !== undefined || adopted.service !== undefined;
        try {
            const host = await applyObjects(client, spec, objects);
            if (adopts) await unmark(client, objects);
            return { id: memberId(objects), outs: outputs(inputs, host) };
        } catch (e) {
            // Transactional: what this create made goes (the reason is in the error). Adopted objects stay.
            if (!adopts) await removeObjects(client, objects).catch(() => undefined);
            throw e;
        }
    },

    async read(id, props) {
        const { gone: _, ...p } = props as KubeMemberOutputs;
        const present = await objectsExist(clientOf(p.cluster), objectsOf(id));
        return { id, props: present ? p : { ...p, gone: true } };
    },

    async diff(id, olds, news) {
        // Another namespace (its ID's) or context is another place: a new member there, then this one goes.
        const moved =
            objectsOf(id).namespace !== news.member.tpl.split("/")[0] ||
            (olds.cluster.context ?? null) !== (news.member.cluster.context ?? null);
        const replaces = moved ? ["member"] : olds.gone ? [REPAIR_REPLACE_KEY] : [];
        return { changes: replaces.length > 0 || olds.digest !== digestsOf(news), replaces };
    },

    async update(id, _olds, news) {
        const client = clientOf(news.member.cluster);
        const host = await applyObjects(client, await readSpec(client, news.member), objectsOf(id));
        return { outs: outputs(news, host) };
    },

    async delete(id, props) {
        await removeObjects(clientOf(props.cluster), objectsOf(id));
    },
};

/** One member's Deployment and Service, kept in state as its own part of the spec. */
export class KubeMember extends LoadedDynamicResource {
    declare public readonly host: pulumi.Output<string | undefined>;

    constructor(
        name: string,
        args: { [K in keyof KubeMemberInputs]: pulumi.Input<KubeMemberInputs[K]> },
        opts?: pulumi.CustomResourceOptions,
    ) {
        super(KUBE_MEMBER_TYPE, name, { ...args, digest: undefined, host: undefined, gone: undefined }, opts);
    }
}
