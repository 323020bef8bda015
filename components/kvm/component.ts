import type { KvmProviderConfig } from "./config";
import type { ProviderKindModule } from "../kind";
import { createKvmPoolShared, createKvmProviderShared, KvmProxy } from "./kvm-proxy";
import type { KvmPoolShared } from "./pool-templates";

/** The `kvm` provider kind: base images once per provider entry (all its pools share them), one KvmProxy per member. */
export const kvmComponents: ProviderKindModule<KvmProviderConfig, KvmPoolShared, KvmPoolShared> = {
    createProviderShared: createKvmProviderShared,
    createPoolShared: createKvmPoolShared,
    createMember: (name, args, opts) => new KvmProxy(name, args, opts),
};
