/**
 * The pool section of the config (`egress:pools`): pools, placements, per-member overrides, cloud-init
 * and proxy auth. The bottom layer (src/model): every kind reads these shapes, so they live below the
 * kinds; the provider union, which needs the kinds registry, is src/config/schema.ts.
 */
import { z } from "zod";
import { dnsLabel, identifier, port, proxyPasswordSchema, PROXY_USERNAME } from "./fields";
import { labelsSchema } from "./labels";
import { politenessSchema } from "./politeness";
import { autoscaleSchema, poolGatewaySchema, rotateOnBlocksSchema } from "./pool-policies";

/** Cloud-init user-data: a file (path relative to the project root) or an inline document. */
export const cloudInitSchema = z
    .strictObject({ file: z.string().min(1).optional(), inline: z.string().min(1).optional() })
    .refine((c) => !c.file !== !c.inline, { message: "exactly one of `file` or `inline` is required" });

/** Where members of a pool land: zone picks a KVM host or GCE zone; image and machineType name catalog keys. */
export const placementSchema = z.strictObject({
    zone: z.string().min(1).optional(),
    image: identifier().optional(),
    machineType: z.string().min(1).optional(),
});

/** A per-member override: anything set here replaces the pool's value for member `index`. */
export const memberOverrideSchema = z.strictObject({
    index: z.number().int().min(0),
    port: port().optional(),
    cloudInit: cloudInitSchema.optional(),
    placement: placementSchema.optional(),
});

/** Idle TTL of a sticky session: long enough for a crawl of one site, short enough to forget abandoned ones. */
export const SESSION_TTL_DEFAULT_SECONDS = 1800;

/**
 * Credentials every member of a pool requires (proxy basic auth). The username goes into squid's passwd
 * file and into `http://user:pass@host:port` URLs unescaped, hence its small alphabet.
 */
export const proxyAuthSchema = z.strictObject({
    username: z.string().regex(PROXY_USERNAME, {
        message:
            "must be 1-64 characters of letters, digits, '.', '_', '~' and '-' (safe in squid's passwd file and in a URL)",
    }),
    /** Prefer a Pulumi secret: `pulumi config set --secret --path 'egress:pools[0].auth.password' …`. */
    password: proxyPasswordSchema(),
});

/** How long a pool remembers its members' egress IPs (rotation flags a replacement that brings one back). @default 3600 */
export const IP_MEMORY_DEFAULT_SECONDS = 3600;

export const poolSchema = z
    .strictObject({
        name: dnsLabel(),
        /** Name of an entry in `egress:providers`. */
        provider: dnsLabel(),
        /** Desired member count. */
        replicas: z.number().int({ message: "must be a whole number" }).min(0, { message: "must be 0 or more" }),
        /** Upper bound for `replicas` (scale requests above it are refused), at most 10,000. @default 100 */
        maxReplicas: z.number().int({ message: "must be a whole number" }).min(0).max(10_000).default(100),
        /**
         * Spread the pool's members over stacks of this many (model/shards.ts): members 0..n-1 stay in the
         * installation's stack, the rest live in shard stacks `<stack>.<pool>.<k>`, so a change costs what
         * it costs in a stack of n members whatever the pool's size (issue 33). Kinds whose members share
         * resources their pool creates cannot (config check). Unset: every member in the installation's stack.
         */
        membersPerStack: z.number().int({ message: "must be a whole number" }).min(1).max(10_000).optional(),
        /** Port the proxy listens on (remote kinds). Local members get theirs from the provider entry. @default 3128 */
        port: port().default(3128),
        placement: placementSchema.default({}),
        cloudInit: cloudInitSchema.optional(),
        members: z.array(memberOverrideSchema).default([]),
        /**
         * Proxy credentials every member requires (proxy basic auth, whatever the kind). Kinds with public
         * addresses require it (their `checkPool`). A pool with its own cloud-init configures squid's auth itself.
         */
        auth: proxyAuthSchema.optional(),
        /** Seconds a proxy rests after a lease before it is leased again. @default 0 */
        cooldownSeconds: z.number().int().min(0).default(0),
        /**
         * Seconds a member rests for a target after an `ok` (or `error`) lease with that target; unset =
         * the service's `--target-cooldown` (default 0). Rests after `blocked` are separate (60 s, doubling).
         */
        restAfterOkSeconds: z
            .number()
            .int({ message: "must be a whole number" })
            .min(0, { message: "must be 0 or more" })
            .max(3600, { message: "must be at most 3600 (an hour)" })
            .optional(),
        /**
         * Labels every member of the pool carries (`{country: "de", tier: "residential"}`): crawlers select
         * members by them (`_country_de` in a gateway username, `where` in POST /v1/leases). The member's
         * kind adds `zone` (and `region`/`country` where it knows them), which win. Unset: none
         */
        labels: labelsSchema.optional(),
        /** Per-site politeness (src/model/politeness.ts): `[{host, maxConcurrency?, minIntervalMs?}]`. */
        targets: politenessSchema.optional(),
        /**
         * Seconds a sticky session (`session` in POST /v1/leases) may stay idle — no live lease —
         * before it is forgotten and its next request starts a new one. @default 1800
         */
        sessionTtlSeconds: z
            .number()
            .int({ message: "must be a whole number" })
            .min(1, { message: "must be 1 or more" })
            .max(86400, { message: "must be at most 86400 (a day)" })
            .default(SESSION_TTL_DEFAULT_SECONDS),
        /**
         * Seconds a member may stay unhealthy before `egress serve` replaces it (its reconcile loop); 0 =
         * never (members that are gone, e.g. a dead process, are still repaired). @default 300
         */
        replaceUnhealthyAfterSeconds: z
            .number()
            .int({ message: "must be a whole number" })
            .min(0, { message: "must be 0 (never) or more" })
            .max(7 * 86400, { message: "must be at most 604800 (a week)" })
            .default(300),
        /**
         * Members of this pool `egress serve` repairs or rotates at once (one engine operation replaces at
         * most this many), and the members an `up` that replaces members creates above `replicas` before it
         * replaces as many old ones (src/service/control/rolling). 0 only with `maxUnavailable` ≥ 1. @default 1
         */
        maxSurge: z
            .number()
            .int({ message: "must be a whole number" })
            .min(0, { message: "must be 0 or more" })
            .max(100)
            .default(1),
        /**
         * Members below `replicas` a rolling `up` may take out of service at once (replaced without a surge
         * member standing in): healthy stays ≥ replicas − maxUnavailable. @default 0
         */
        maxUnavailable: z
            .number()
            .int({ message: "must be a whole number" })
            .min(0, { message: "must be 0 or more" })
            .max(100)
            .default(0),
        /**
         * Seconds `egress serve` lets leases on a member it is about to remove (scale-down, repair of an
         * unhealthy member) run before it ends them and deletes the member; no new lease goes to it
         * meanwhile. 0 = end them at once. @default 60
         */
        drainSeconds: z
            .number()
            .int({ message: "must be a whole number" })
            .min(0, { message: "must be 0 (no drain) or more" })
            .max(3600, { message: "must be at most 3600 (an hour, the longest lease)" })
            .default(60),
        /**
         * Seconds after which `egress serve` replaces a member by age (src/service/control/rotate), each
         * member's deadline brought forward by a jitter of up to 10% so members do not all go at once. A replacement is
         * created and healthy before the old member drains (`maxSurge` at a time). At least 60 (config load,
         * src/config/load.ts; tests lower the floor with EGRESS_TEST_MIN_ROTATE_SECONDS). Unset = never.
         */
        rotateAfterSeconds: z
            .number()
            .int({ message: "must be a whole number" })
            .min(1, { message: "must be 1 or more" })
            .max(365 * 86400, { message: "must be at most 31536000 (a year)" })
            .optional(),
        /** Replace members a site blocks (rotateOnBlocksSchema); unset = never by blocks. */
        rotateOnBlocks: rotateOnBlocksSchema.optional(),
        /**
         * Seconds the pool remembers the egress IPs its members had: a rotation whose replacement comes back
         * with one of them is flagged (`reusedIp` in its record, a warn line, egress_rotation_reused_ips_total).
         * 0 = off. @default 3600
         */
        ipMemorySeconds: z
            .number()
            .int({ message: "must be a whole number" })
            .min(0, { message: "must be 0 (off) or more" })
            .max(7 * 86400, { message: "must be at most 604800 (a week)" })
            .default(IP_MEMORY_DEFAULT_SECONDS),
        /** Follow demand instead of a fixed `replicas` (see autoscaleSchema); unset = the count is set by hand. */
        autoscale: autoscaleSchema.optional(),
        /** The gateway's per-pool settings (poolGatewaySchema); unset = its defaults, applied where they are used. */
        gateway: poolGatewaySchema.optional(),
    })
    .superRefine((p, ctx) => {
        // A rolling change needs room: a surge member, or a member it may take out of service.
        if (p.maxSurge === 0 && p.maxUnavailable === 0)
            ctx.addIssue({
                code: "custom",
                path: ["maxSurge"],
                message: "must be 1 or more while maxUnavailable is 0",
            });
        // Rotation by age creates the replacement first, always.
        else if (p.maxSurge === 0 && p.rotateAfterSeconds !== undefined)
            ctx.addIssue({ code: "custom", path: ["maxSurge"], message: "must be 1 or more with rotateAfterSeconds" });
        if (p.autoscale && p.autoscale.max > p.maxReplicas)
            ctx.addIssue({
                code: "custom",
                path: ["autoscale", "max"],
                message: `must not exceed maxReplicas (${p.maxReplicas})`,
            });
        if (p.replicas > p.maxReplicas)
            ctx.addIssue({
                code: "custom",
                path: ["replicas"],
                message: `must not exceed maxReplicas (${p.maxReplicas})`,
            });
        const seen = new Set<number>();
        p.members.forEach((m, i) => {
            if (m.index >= p.maxReplicas)
                ctx.addIssue({
                    code: "custom",
                    path: ["members", i, "index"],
                    message: `must be below maxReplicas (${p.maxReplicas})`,
                });
            if (seen.has(m.index))
                ctx.addIssue({
                    code: "custom",
                    path: ["members", i, "index"],
                    message: `duplicates another override for member ${m.index}`,
                });
            seen.add(m.index);
        });
    });

export type ProxyAuthConfig = z.infer<typeof proxyAuthSchema>;
export type CloudInit = z.infer<typeof cloudInitSchema>;
export type Placement = z.infer<typeof placementSchema>;
export type MemberOverride = z.infer<typeof memberOverrideSchema>;
export type PoolConfig = z.infer<typeof poolSchema>;
