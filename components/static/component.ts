import type { StaticProviderConfig } from "./config";
import type { ProviderKindModule } from "../kind";
import { StaticProxy } from "./static-proxy";

export { StaticProxy, StaticProxyArgs } from "./static-proxy";

/** The `static` kind: one StaticProxy (no cloud resources) per listed proxy. */
export const staticComponents: ProviderKindModule<StaticProviderConfig> = {
    createMember: (name, args, opts) => new StaticProxy(name, args, opts),
};
