import type { KvmProviderConfig } from "../../src/config/providers/kvm";
import type { ProviderKindModule } from "../kinds";
import { kvmPendingCreateUndo } from "./recover";
import { createKvmPoolShared, createKvmProviderShared, KvmPoolShared, KvmProxy } from "./kvm-proxy";

/** The `kvm` provider kind: base images once per provider entry (all its pools share them), one KvmProxy per member. */
export const kvmKind: ProviderKindModule<KvmProviderConfig, KvmPoolShared, KvmPoolShared> = {
    createProviderShared: createKvmProviderShared,
    createPoolShared: createKvmPoolShared,
    createMember: (name, args, shared, opts) => new KvmProxy(name, args, opts, shared),
    undoPendingCreate: kvmPendingCreateUndo,
};
