import type { GcpProviderConfig } from "../../src/config";
import type { ProviderKindModule } from "../kinds";
import { GcpProxy } from "./gcp-proxy";
import { createGcpPoolShared, GcpPoolShared } from "./shared";

export { GcpProxy, GcpProxyArgs } from "./gcp-proxy";
export { createGcpPoolShared, GcpPoolShared } from "./shared";
export * from "./names";

/** The `gcp` kind: a provider and firewall per pool, an instance (and optional address) per member. */
export const gcpKind: ProviderKindModule<GcpProviderConfig, GcpPoolShared> = {
    createPoolShared: createGcpPoolShared,
    createMember: (name, args, shared, opts) => new GcpProxy(name, args, shared, opts),
};
