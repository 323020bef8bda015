import type { GcpProviderConfig } from "../../src/config";
import type { ProviderKindModule } from "../kinds";
import { GcpProxy } from "./gcp-proxy";
import { createGcpPoolShared, GcpPoolShared } from "./shared";

export { GcpProxy, GcpProxyArgs, GcpMemberSpec, gcpMemberSpec } from "./gcp-proxy";
export { createGcpPoolShared, GcpPoolShared } from "./shared";
export * from "./names";

/** The `gcp` kind: a provider and firewall per pool, an instance (and optional address) per member. */
export const gcpKind: ProviderKindModule<GcpProviderConfig, GcpPoolShared> = {
    createPoolShared: (name, args, opts) => createGcpPoolShared(name, args, opts),
    createMember: (name, args, shared, opts) => {
        if (!shared) throw new Error(`gcp member ${name} needs the pool's shared resources (createPoolShared was not called)`);
        return new GcpProxy(name, args, shared, opts);
    },
};
