import { z } from "zod";

const CIDR = /^(\d{1,3}\.){3}\d{1,3}\/\d{1,2}$|^[0-9a-fA-F:]+\/\d{1,3}$/;
const ZONE = /^[a-z]+-[a-z]+\d+-[a-z]$/;

/** `type: gcp` — Compute Engine instances with an external IP. */
export const gcpProviderSchema = z.strictObject({
    type: z.literal("gcp"),
    project: z.string().min(1),
    zones: z.array(z.string().regex(ZONE, { message: "must be a GCE zone such as europe-west1-b" })).min(1),
    /** @default "e2-micro" */
    machineType: z.string().min(1).default("e2-micro"),
    /** @default "debian-cloud/debian-12" */
    image: z.string().min(1).default("debian-cloud/debian-12"),
    /** Spot (preemptible) instances. @default false */
    spot: z.boolean().default(false),
    /** Reserve a static external address per member instead of an ephemeral one. @default false */
    staticAddress: z.boolean().default(false),
    network: z.string().min(1).default("default"),
    /**
     * Source ranges allowed to reach the proxy port. Required, and 0.0.0.0/0 is refused: an open proxy
     * on a public IP is found and abused within hours.
     */
    allowedSourceRanges: z
        .array(z.string().regex(CIDR, { message: "must be a CIDR range such as 203.0.113.7/32" }))
        .min(1, { message: "must list at least one source range" })
        .refine((r) => !r.some((c) => c === "0.0.0.0/0" || c === "::/0"), { message: "must not contain 0.0.0.0/0 or ::/0 (an open proxy)" }),
});

export type GcpProviderConfig = z.infer<typeof gcpProviderSchema>;
