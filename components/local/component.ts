import type { LocalProviderConfig } from "./config";
import type { ProviderKindModule } from "../kind";
import { LocalProxy } from "./local-proxy";

export { LocalProxy, LocalProxyArgs } from "./local-proxy";
export { LocalProxyProcess, localProcessProvider } from "./provider";

/** The `local` kind: one LocalProxy (a detached proxy-chain process on loopback) per member. */
export const localComponents: ProviderKindModule<LocalProviderConfig> = {
    createMember: (name, args, opts) => new LocalProxy(name, args, opts),
};
