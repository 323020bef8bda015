import * as pulumi from "@pulumi/pulumi";
import type { KubernetesProviderConfig } from "./config";
import { memberLabels } from "../../src/model";
import { MemberArgs, memberIdentity, ProxyMemberComponent } from "../shared/member";
import type { KubernetesPoolShared } from "./shared";
import { KubeMember } from "./member-provider";

/** Arguments of a PodProxy: the common member arguments with a `kubernetes` provider entry. */
export type PodProxyArgs = MemberArgs<KubernetesProviderConfig, KubernetesPoolShared>;

export { CONFIG_HASH_ANNOTATION } from "./member-manifest";

/**
 * One proxy as a single-replica Deployment plus its own Service (member-manifest.ts says why), kept in
 * state as one `egress:kubernetes:Member` whose inputs are the member's compact spec (member-provider.ts).
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
        this.pod = new KubeMember(
            `${name}-member`,
            {
                cluster: {
                    ...(entry.kubeconfigPath ? { kubeconfigPath: entry.kubeconfigPath } : {}),
                    ...(entry.context ? { context: entry.context } : {}),
                },
                member: name,
                clusterDomain: entry.clusterDomain,
                spec: pulumi.output(shared.secret.metadata.name).apply((secret) => ({
                    namespace: shared.namespace,
                    labels: memberLabels(args.context, args.pool, plan.name),
                    ...(args.context.installation.legacy ? { legacyInstallation: true } : {}),
                    image: entry.image,
                    port: plan.port,
                    resources: entry.resources,
                    ...(plan.placement.zone ? { zone: plan.placement.zone } : {}),
                    secret,
                    key,
                    hash,
                    ...(shared.auth ? { auth: true } : {}),
                    serviceType: entry.serviceType,
                    ...(entry.serviceType === "LoadBalancer" && entry.allowedSourceRanges
                        ? { ranges: entry.allowedSourceRanges }
                        : {}),
                })),
            },
            { parent: this },
        );
        this.publish(args, this.pod.host, plan.port, zone);
    }
}
