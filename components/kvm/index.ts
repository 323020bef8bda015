import type { KvmProviderConfig } from "../../src/config/providers/kvm";
import type { ProviderKindModule } from "../kinds";
import { createKvmPoolShared, createKvmProviderShared, KvmPoolShared, KvmProxy } from "./kvm-proxy";

export { KvmProxy, KvmProxyArgs, KvmPoolShared, createKvmPoolShared, createKvmProviderShared, defaultUserData } from "./kvm-proxy";
export { BaseImage, baseImageProvider } from "./base-image";
export { Overlay, overlayProvider } from "./overlay";
export { SeedDisk, seedDiskProvider } from "./seed-disk";
export { Domain, domainProvider } from "./domain";
export * from "./naming";

/** The `kvm` provider kind: base images once per provider entry (all its pools share them), one KvmProxy per member. */
export const kvmKind: ProviderKindModule<KvmProviderConfig, KvmPoolShared, KvmPoolShared> = {
    createProviderShared: (name, args, opts) => createKvmProviderShared(name, args, opts),
    createPoolShared: (name, args, opts) => createKvmPoolShared(name, args, opts),
    createMember: (name, args, shared, opts) => new KvmProxy(name, args, opts, shared),
};
