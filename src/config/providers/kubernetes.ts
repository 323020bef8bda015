import { z } from "zod";
import { dnsLabel } from "../names";

/** `type: kubernetes` — one proxy Deployment per member in a namespace. */
export const kubernetesProviderSchema = z.strictObject({
    type: z.literal("kubernetes"),
    /** kubeconfig context. Unset: the kubeconfig's current context. */
    context: z.string().min(1).optional(),
    /** Path to the kubeconfig. Unset: $KUBECONFIG or ~/.kube/config. */
    kubeconfigPath: z.string().min(1).optional(),
    namespace: dnsLabel().default("egress"),
    /** Proxy container image. @default "ubuntu/squid:latest" */
    image: z.string().min(1).default("ubuntu/squid:latest"),
    /** Service type per member. @default "ClusterIP" */
    serviceType: z.enum(["ClusterIP", "NodePort", "LoadBalancer"]).default("ClusterIP"),
    resources: z
        .strictObject({
            cpu: z.string().default("50m"),
            memory: z.string().default("64Mi"),
            cpuLimit: z.string().default("500m"),
            memoryLimit: z.string().default("256Mi"),
        })
        .default({ cpu: "50m", memory: "64Mi", cpuLimit: "500m", memoryLimit: "256Mi" }),
});

export type KubernetesProviderConfig = z.infer<typeof kubernetesProviderSchema>;
