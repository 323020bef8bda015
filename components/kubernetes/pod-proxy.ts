import * as pulumi from "@pulumi/pulumi";
import type { KubernetesProviderConfig } from "./config";
import { MemberArgs, memberIdentity, ProxyMemberComponent } from "../shared/member";
import type { KubernetesPoolShared } from "./shared";
import { KubeMember } from "./member-provider";
import { objectsOf } from "./member-objects";
import type { MemberRef } from "./member-manifest";

/** Arguments of a PodProxy: the common member arguments with a `kubernetes` provider entry. */
export type PodProxyArgs = MemberArgs<KubernetesProviderConfig, KubernetesPoolShared>;

export { CONFIG_HASH_ANNOTATION } from "./member-manifest";

/**
 * One proxy as a single-replica Deployment plus its own Service (member-manifest.ts says why), kept in
 * state as one `egress:kubernetes:Member` whose inputs are the member's own part of its spec: the rest is
 * its pool's, kept once in the pool's members ConfigMap (member-provider.ts).
 */
export class PodProxy extends ProxyMemberComponent {
    public readonly pod: KubeMember;

    constructor(name: string, args: PodProxyArgs, opts?: pulumi.ComponentResourceOptions) {
        const zone = args.plan.placement.zone ?? args.entry.context ?? "kubernetes";
        super("egress:kubernetes:PodProxy", name, memberIdentity(args, zone), opts);
        // Config validation (src/config/load.ts) refuses placement.image and placement.machineType here.
        const { entry, plan, shared } = args;
        // The layout covers every planned member: the pool built it from the same plans.
        const { key, hash } = shared.layout.mounts.get(plan.index)!;
        const template = shared.layout.shared;
        // What differs from the pool's template (shared.ts memberTemplate) and nothing else: bytes per member.
        const own: Omit<MemberRef, "name" | "tpl"> = {
            ...(plan.port !== shared.port ? { port: plan.port } : {}),
            ...(key !== template.key ? { key } : {}),
            ...(hash !== template.hash ? { hash } : {}),
            ...(plan.placement.zone ? { zone: plan.placement.zone } : {}),
        };
        const cluster = {
            ...(entry.kubeconfigPath ? { kubeconfigPath: entry.kubeconfigPath } : {}),
            ...(entry.context ? { context: entry.context } : {}),
        };
        this.pod = new KubeMember(
            name,
            {
                member: pulumi
                    .output(shared.members.metadata.name)
                    .apply((tpl) => ({ name, tpl: `${shared.namespace}/${tpl}`, ...own, cluster })),
            },
            { parent: this },
        );
        // A LoadBalancer's address; otherwise the Service's DNS name, from the member's ID.
        const host = pulumi
            .all([this.pod.id, this.pod.host])
            .apply(([id, lb]) => lb ?? `${objectsOf(id).service}.${shared.namespace}.svc.${entry.clusterDomain}`);
        this.publish(args, host, plan.port, zone);
    }
}
