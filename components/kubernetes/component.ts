import type { KubernetesProviderConfig } from "./config";
import type { ProviderKindModule } from "../kind";
import { PodProxy } from "./pod-proxy";
import { createKubernetesPoolShared, KubernetesPoolShared } from "./shared";

export { PodProxy, PodProxyArgs, CONFIG_HASH_ANNOTATION } from "./pod-proxy";
export { createKubernetesPoolShared, KubernetesPoolShared } from "./shared";
export * from "./squid-config";

/** The `kubernetes` kind: a provider and config Secret per pool, a Deployment and Service per member. */
export const kubernetesComponents: ProviderKindModule<KubernetesProviderConfig, KubernetesPoolShared> = {
    createPoolShared: createKubernetesPoolShared,
    createMember: (name, args, opts) => new PodProxy(name, args, opts),
};
