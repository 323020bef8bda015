/**
 * Upgrading a stack made before the member resource (member-provider.ts): its members' Deployments and
 * Services are in state as @pulumi/kubernetes resources. Each live object gets ADOPT_ANNOTATION; the
 * engine drops the old resources from state (src/engine/hand-over.ts), and the member resource's create
 * then takes the marked objects over under their names, with the same pod template: no pod rolls, no
 * member is replaced. A plain `pulumi up` on such a stack, without `egress up` first, replaces the members.
 */
import type { HandOver } from "../kind";
import { KubeApiError, KubeClient } from "./api";
import { ADOPT_ANNOTATION, KUBE_MEMBER_TYPE } from "./member-provider";
import { memberPaths } from "./member-manifest";

/** The types a member was made of, and where their objects live. */
const OLD_TYPES: Record<string, (ns: string, name: string) => string> = {
    "kubernetes:apps/v1:Deployment": (ns, n) => memberPaths(ns, n).deployment,
    "kubernetes:core/v1:Service": (ns, n) => memberPaths(ns, n).service,
};

/** Hands a member's Deployment or Service (state of an earlier release) over to its member resource. */
const handOverObject: HandOver = async (resource, provider) => {
    const successor = memberUrnOf(resource.urn);
    if (!successor) return ""; // not a member's (a Deployment of some other component): left alone
    const type = Object.keys(OLD_TYPES).find((t) => resource.urn.includes(`$${t}::`))!;
    const [ns, name] = resource.id.split("/");
    const client = KubeClient.forEntry({
        ...(typeof provider?.kubeconfig === "string" && provider.kubeconfig
            ? { kubeconfigPath: provider.kubeconfig }
            : {}),
        ...(typeof provider?.context === "string" && provider.context ? { context: provider.context } : {}),
    });
    // A merge patch of one annotation: the fields @pulumi/kubernetes set stay as they are (and whose they are).
    // An object deleted behind egress's back is handed over all the same: the member makes it anew.
    await client
        .mergePatch(OLD_TYPES[type](ns, name), {
            metadata: { annotations: { [ADOPT_ANNOTATION]: "true" } },
        })
        .catch((e) => {
            if (!(e instanceof KubeApiError && e.status === 404)) throw e;
        });
    return successor;
};

/** `urn:…$egress:kubernetes:PodProxy$kubernetes:apps/v1:Deployment::web-0` → its PodProxy's member resource's URN. */
export function memberUrnOf(childUrn: string): string | "" {
    const chain = childUrn.slice(0, childUrn.lastIndexOf("$")); // urn:pulumi:<stack>::<project>::…$egress:kubernetes:PodProxy
    if (!chain.endsWith("$egress:kubernetes:PodProxy")) return "";
    const parentName = childUrn.slice(childUrn.lastIndexOf("::") + 2); // the child's name is its member's
    return `${chain}$${KUBE_MEMBER_TYPE}::${parentName}`;
}

export const kubernetesHandOvers: Record<string, HandOver> = Object.fromEntries(
    Object.keys(OLD_TYPES).map((t) => [t, handOverObject]),
);
