import type { GcpProviderConfig } from "./config";
import type { ProviderKindModule } from "../kind";
import { GcpProxy } from "./gcp-proxy";
import { createGcpPoolShared, GcpPoolShared } from "./shared";

export { GcpProxy, GcpProxyArgs } from "./gcp-proxy";
export { createGcpPoolShared, GcpPoolShared } from "./shared";
export * from "./names";
export * from "./squid-config";

/** The `gcp` kind: a provider and firewall per pool, an instance (and optional address) per member. */
export const gcpComponents: ProviderKindModule<GcpProviderConfig, GcpPoolShared> = {
    createPoolShared: createGcpPoolShared,
    createMember: (name, args, opts) => new GcpProxy(name, args, opts),
};
