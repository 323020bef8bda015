/** The KVM dynamic providers by type token, for the engine's dynamic-provider process (components/shared/dynamic.ts). */
import type * as pulumi from "@pulumi/pulumi";
import { BASE_IMAGE_TYPE, baseImageProvider } from "./base-image";
import { DOMAIN_TYPE, domainProvider } from "./domain";
import { OVERLAY_TYPE, overlayProvider } from "./overlay";
import { SEED_DISK_TYPE, seedDiskProvider } from "./seed-disk";
import { keepingProviderText } from "../shared/dynamic";

/**
 * Each one keeps older provider text in its outputs rather than taking an update for it: their outputs
 * chain (base image → overlay → domain, seed disk → domain), and a forced update would preview replaces.
 */
export function kvmDynamicProviders(): Record<string, pulumi.dynamic.ResourceProvider<any, any>> {
    return {
        [BASE_IMAGE_TYPE]: keepingProviderText(baseImageProvider),
        [DOMAIN_TYPE]: keepingProviderText(domainProvider),
        [OVERLAY_TYPE]: keepingProviderText(overlayProvider),
        [SEED_DISK_TYPE]: keepingProviderText(seedDiskProvider),
    };
}
