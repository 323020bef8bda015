import { z } from "zod";
import { providerCommonFields } from "../shared/config";
import { dnsLabel } from "../../src/model/fields";
import { allowedSourceRangesSchema } from "../../src/model/cidr";
import type { ConfigProblem, Placement } from "../../src/model";

/** Kubernetes resource quantities: `100m`, `0.5`, `64Mi`, `1G`. */
const QUANTITY = /^\d+(\.\d+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/;
const quantity = (d: string) =>
    z.string().regex(QUANTITY, { message: "must be a Kubernetes quantity such as 100m or 64Mi" }).default(d);

/** `type: kubernetes` — one proxy Deployment and Service per member, in one namespace. */
export const kubernetesProviderSchema = z
    .strictObject({
        type: z.literal("kubernetes"),
        ...providerCommonFields,
        /** kubeconfig context. Unset: the kubeconfig's current context. */
        context: z.string().min(1).optional(),
        /** Path to the kubeconfig. Unset: $KUBECONFIG or ~/.kube/config. */
        kubeconfigPath: z.string().min(1).optional(),
        /** Namespace the members live in; it must exist (egress does not own it). @default "egress" */
        namespace: dnsLabel().default("egress"),
        /** Cluster DNS domain, for member hosts `<service>.<namespace>.svc.<clusterDomain>`. @default "cluster.local" */
        clusterDomain: z
            .string()
            .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, { message: "must be a DNS domain such as cluster.local" })
            .default("cluster.local"),
        /** Proxy container image; it must read /etc/squid/squid.conf. @default "ubuntu/squid:latest" */
        image: z.string().min(1).default("ubuntu/squid:latest"),
        /** Service type per member. @default "ClusterIP" */
        serviceType: z.enum(["ClusterIP", "NodePort", "LoadBalancer"]).default("ClusterIP"),
        /**
         * Client ranges a LoadBalancer Service admits (`loadBalancerSourceRanges`), also allowed by the generated
         * squid.conf. Required with `serviceType: LoadBalancer`; 0.0.0.0/0 is refused (an open proxy).
         */
        allowedSourceRanges: allowedSourceRangesSchema().optional(),
        /** Container requests and limits. */
        resources: z
            .strictObject({
                cpu: quantity("50m"),
                memory: quantity("64Mi"),
                cpuLimit: quantity("500m"),
                memoryLimit: quantity("256Mi"),
            })
            .default({ cpu: "50m", memory: "64Mi", cpuLimit: "500m", memoryLimit: "256Mi" }),
    })
    .superRefine((v, ctx) => {
        if (v.serviceType === "LoadBalancer" && !v.allowedSourceRanges?.length)
            ctx.addIssue({
                code: "custom",
                path: ["allowedSourceRanges"],
                message:
                    "is required with `serviceType: LoadBalancer` (a public proxy without source ranges is an open proxy)",
            });
    });

export type KubernetesProviderConfig = z.infer<typeof kubernetesProviderSchema>;

/** A pool's placement on a Kubernetes entry: a zone (a node selector) only; pods have no image key or machine type. */
export function checkKubernetesPlacement(placement: Placement, at: string): ConfigProblem[] {
    const out: ConfigProblem[] = [];
    if (placement.image)
        out.push({
            path: `${at}.image`,
            rule: "is not used by kubernetes providers (set `image` on the provider entry)",
            value: placement.image,
        });
    if (placement.machineType)
        out.push({
            path: `${at}.machineType`,
            rule: "is not used by kubernetes providers (set `resources` on the provider entry)",
            value: placement.machineType,
        });
    return out;
}
