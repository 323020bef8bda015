/** The KVM dynamic providers by type token, for the engine's dynamic-provider process (components/shared/dynamic.ts). */
import type * as pulumi from "@pulumi/pulumi";
import { BASE_IMAGE_TYPE, baseImageProvider } from "./base-image";
import { DOMAIN_TYPE, domainProvider } from "./domain";
import { OVERLAY_TYPE, overlayProvider } from "./overlay";
import { SEED_DISK_TYPE, seedDiskProvider } from "./seed-disk";
import { KVM_MEMBER_TYPE, kvmMemberProvider } from "./member-provider";
import { TEMPLATE_TYPE, templateProvider } from "./member-template";
import { keepingProviderText } from "../shared/dynamic";

/**
 * Each one keeps older provider text in its outputs rather than taking an update for it: their outputs
 * chain (base image → template; and, in stacks of earlier releases, overlay → domain, seed disk →
 * domain), and a forced update would preview replaces. Overlay, SeedDisk and Domain stay for the stacks
 * an earlier release made, until their members are handed over (hand-over.ts) or deleted.
 */
export function kvmDynamicProviders(): Record<string, pulumi.dynamic.ResourceProvider<any, any>> {
    return {
        [BASE_IMAGE_TYPE]: keepingProviderText(baseImageProvider),
        [DOMAIN_TYPE]: keepingProviderText(domainProvider),
        [OVERLAY_TYPE]: keepingProviderText(overlayProvider),
        [SEED_DISK_TYPE]: keepingProviderText(seedDiskProvider),
        [TEMPLATE_TYPE]: keepingProviderText(templateProvider),
        [KVM_MEMBER_TYPE]: kvmMemberProvider,
    };
}
