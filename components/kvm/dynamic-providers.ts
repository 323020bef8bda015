/** The KVM dynamic providers by type token, for the engine's dynamic-provider process (components/shared/dynamic.ts). */
import type * as pulumi from "@pulumi/pulumi";
import { BASE_IMAGE_TYPE, baseImageProvider } from "./base-image";
import { DOMAIN_TYPE, domainProvider } from "./domain";
import { OVERLAY_TYPE, overlayProvider } from "./overlay";
import { SEED_DISK_TYPE, seedDiskProvider } from "./seed-disk";

export function kvmDynamicProviders(): Record<string, pulumi.dynamic.ResourceProvider<any, any>> {
    return {
        [BASE_IMAGE_TYPE]: baseImageProvider,
        [DOMAIN_TYPE]: domainProvider,
        [OVERLAY_TYPE]: overlayProvider,
        [SEED_DISK_TYPE]: seedDiskProvider,
    };
}
