import { z } from "zod";
import { providerCommonFields } from "../shared/config";
import { allowedSourceRangesSchema } from "../../src/model/cidr";
import type { ConfigProblem, Placement, PoolConfig } from "../../src/model";

/** GCE zone names: `<continent>-<area><n>-<letter>`, e.g. europe-west1-b, us-central1-a. */
export const GCE_ZONE = /^[a-z]+-[a-z]+\d+-[a-z]$/;

/** `type: gcp` — Compute Engine instances with an external IP, one per member. */
export const gcpProviderSchema = z.strictObject({
    type: z.literal("gcp"),
    ...providerCommonFields,
    /** GCP project ID the instances, addresses and firewall live in. */
    project: z.string().regex(/^([a-z0-9.-]+:)?[a-z][-a-z0-9]{4,28}[a-z0-9]$/, {
        message: "must be a GCP project ID (6-30 lower-case letters, digits and '-')",
    }),
    /** Zones members may use. A member goes to `placement.zone`, or else to the first zone listed. */
    zones: z
        .array(z.string().regex(GCE_ZONE, { message: "must be a GCE zone such as europe-west1-b" }))
        .min(1, { message: "must list at least one zone" }),
    /** Machine type; `placement.machineType` overrides it per pool or member. @default "e2-micro" */
    machineType: z.string().min(1).default("e2-micro"),
    /**
     * Boot image (`project/family` or a full image URL). It must run cloud-init, which reads the `user-data`
     * metadata key: Ubuntu images do, Debian's GCE images do not. @default "ubuntu-os-cloud/ubuntu-2404-lts-amd64"
     */
    image: z.string().min(1).default("ubuntu-os-cloud/ubuntu-2404-lts-amd64"),
    /** Boot disk size in GB. @default 10 */
    diskSizeGb: z.number().int().min(10).max(65536).default(10),
    /** Spot instances: much cheaper, may be stopped at any time (`egress serve` replaces a stopped one; otherwise they restart on the next `up`). @default false */
    spot: z.boolean().default(false),
    /** Reserve a static external address per member instead of an ephemeral one. @default false */
    staticAddress: z.boolean().default(false),
    /** VPC network. @default "default" */
    network: z.string().min(1).default("default"),
    /** Subnetwork, required for custom-mode networks. Unset: the network's subnet in the zone's region. */
    subnetwork: z.string().min(1).optional(),
    /**
     * Source ranges allowed to reach the proxy ports. Required, and 0.0.0.0/0 is refused: an open proxy
     * on a public IP is found and abused within hours.
     */
    allowedSourceRanges: allowedSourceRangesSchema(),
});

export type GcpProviderConfig = z.infer<typeof gcpProviderSchema>;

/** A pool's placement on a GCE entry: one of its zones; image and machine type come from the entry (machineType may be overridden). */
export function checkGcpPlacement(entry: GcpProviderConfig, placement: Placement, at: string): ConfigProblem[] {
    const out: ConfigProblem[] = [];
    if (placement.zone && !entry.zones.includes(placement.zone))
        out.push({
            path: `${at}.zone`,
            rule: `must be one of this provider's zones (${entry.zones.join(", ")})`,
            value: placement.zone,
        });
    if (placement.image)
        out.push({
            path: `${at}.image`,
            rule: "is not used by gcp providers (set `image` on the provider entry)",
            value: placement.image,
        });
    return out;
}

/**
 * A gcp pool must require credentials: its proxies have public addresses, and without `auth` anyone inside
 * the source ranges (often a whole office or cloud region) could use them.
 */
export function checkGcpAuth(pool: PoolConfig, at: (...p: (string | number)[]) => string): ConfigProblem[] {
    if (pool.auth) return [];
    return [
        {
            path: at("auth"),
            rule: `is required for gcp pools (their proxies have public addresses): set \`auth.username\` and \`auth.password\`, the password as a secret, e.g. pulumi config set --secret --path '${at("auth", "password")}' "$(openssl rand -base64 24)"`,
        },
    ];
}
