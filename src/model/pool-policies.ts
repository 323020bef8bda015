/**
 * The per-pool fleet policies of the pool section (`egress:pools[].autoscale`, `.gateway`,
 * `.rotateOnBlocks`): how `egress serve` sizes, routes through and rotates a pool. Separate from pool.ts
 * because these are the service's knobs, not what the program provisions; poolSchema composes them.
 */
import { z } from "zod";

/**
 * Autoscaling of a pool by `egress serve` (src/service/control/autoscale): the replica count follows
 * demand within [min, max]. While set, the service owns `replicas` (it writes it) and refuses manual
 * scale requests (409 `autoscaled`); change these bounds instead.
 */
export const autoscaleSchema = z
    .strictObject({
        /** Fewest members; 0 lets an idle pool empty out (its first request then starts a scale-up). @default 1 */
        min: z.number().int({ message: "must be a whole number" }).min(0, { message: "must be 0 or more" }).default(1),
        /** Most members; at most the pool's maxReplicas. */
        max: z.number().int({ message: "must be a whole number" }).min(1, { message: "must be 1 or more" }),
        /** Leased share of the members to aim for: 0.5 keeps one free member per leased one. @default 0.7 */
        targetUtilization: z
            .number()
            .gt(0, { message: "must be above 0 and at most 1" })
            .max(1, { message: "must be above 0 and at most 1" })
            .default(0.7),
        /** Seconds demand must stay below target before the pool shrinks (drained, like any scale-down). @default 300 */
        scaleDownAfterSeconds: z
            .number()
            .int({ message: "must be a whole number" })
            .min(0, { message: "must be 0 or more" })
            .max(86400, { message: "must be at most 86400 (a day)" })
            .default(300),
        /** Seconds between two decisions of this pool, so one engine run's effect is seen before the next. @default 60 */
        cooldownSeconds: z
            .number()
            .int({ message: "must be a whole number" })
            .min(0, { message: "must be 0 or more" })
            .max(86400, { message: "must be at most 86400 (a day)" })
            .default(60),
    })
    .superRefine((a, ctx) => {
        if (a.min > a.max) ctx.addIssue({ code: "custom", path: ["min"], message: `must not exceed max (${a.max})` });
    });

/** Retries of a gateway request on another member when the pool's config does not say (`gateway.retries`). */
export const GATEWAY_RETRIES_DEFAULT = 1;
/** The most retries a pool may ask for: each one is a member's connect timeout more a crawler may wait. */
export const GATEWAY_RETRIES_MAX = 5;
/**
 * Gateway requests one member carries at once when the pool's config does not say
 * (`gateway.memberConcurrency`): 1, today's behaviour, so one site never sees one IP carry several of
 * this service's requests at once unless the pool asks for it (docs/decisions/0060-member-concurrency.md).
 */
export const GATEWAY_MEMBER_CONCURRENCY_DEFAULT = 1;
/** The most gateway requests one member may carry at once. */
export const GATEWAY_MEMBER_CONCURRENCY_MAX = 64;

/** How the rotating gateway (`egress serve --gateway-port`) treats this pool's requests. */
export const poolGatewaySchema = z.strictObject({
    /**
     * How many times a replayable request is retried on another member after its member failed it
     * before answering (refused, reset, timed out, or the member's own proxy error); 0 = never.
     * A request may lower it (`_retries_<n>` in the proxy username), never raise it. @default 1
     */
    retries: z
        .number()
        .int({ message: "must be a whole number" })
        .min(0, { message: "must be 0 (no retries) or more" })
        .max(GATEWAY_RETRIES_MAX, { message: `must be at most ${GATEWAY_RETRIES_MAX}` })
        .default(GATEWAY_RETRIES_DEFAULT),
    /**
     * How many times an idempotent, replayable plain request is retried on another member when the
     * origin answered it with a block (the service's block rules: 403/429 or a block header); 0 = the
     * block is relayed as it came. Each blocked attempt is released `blocked` (its member rests for that
     * site). CONNECT tunnels carry TLS the gateway cannot read, so they are never retried on a block.
     * `_retries_<n>` in the username lowers it too. @default 0
     */
    retryOnBlock: z
        .number()
        .int({ message: "must be a whole number" })
        .min(0, { message: "must be 0 (relay blocks) or more" })
        .max(GATEWAY_RETRIES_MAX, { message: `must be at most ${GATEWAY_RETRIES_MAX}` })
        .optional(),
    /**
     * How many gateway requests one member carries at once. Gateway requests share a member up to this;
     * an exclusive lease (POST /v1/leases) is never granted on a member carrying one, and a member under
     * an exclusive lease carries none. Per-site politeness (`targets`) still counts every request.
     * @default 1 (one request per member, as before; see docs/decisions/0060-member-concurrency.md)
     */
    memberConcurrency: z
        .number()
        .int({ message: "must be a whole number" })
        .min(1, { message: "must be 1 (one request per member) or more" })
        .max(GATEWAY_MEMBER_CONCURRENCY_MAX, { message: `must be at most ${GATEWAY_MEMBER_CONCURRENCY_MAX}` })
        .optional(),
});

/**
 * Rotation by blocks (src/service/control/rotate/blocks.ts): a member whose share of `blocked` outcomes
 * among its outcomes in the last `windowSeconds` reaches `ratio` (with at least `minOutcomes` of them) is
 * replaced like a member due by age. When more than half of a pool's members trip at once, none is
 * replaced: the site blocks the pool (GET /v1/pools shows `rotation.poolWideBlock`).
 */
export const rotateOnBlocksSchema = z.strictObject({
    /** Share of blocked outcomes that trips a member: 0.5 = half of its outcomes. */
    ratio: z
        .number()
        .gt(0, { message: "must be above 0 and at most 1" })
        .max(1, { message: "must be above 0 and at most 1" }),
    /** Fewest outcomes in the window before the share counts (one block of one request is no signal). */
    minOutcomes: z.number().int({ message: "must be a whole number" }).min(1, { message: "must be 1 or more" }),
    /** The window's length, seconds: outcomes older than this no longer count. */
    windowSeconds: z
        .number()
        .gt(0, { message: "must be above 0" })
        .max(86400, { message: "must be at most 86400 (a day)" }),
});

export type AutoscaleConfig = z.infer<typeof autoscaleSchema>;
export type RotateOnBlocksConfig = z.infer<typeof rotateOnBlocksSchema>;
export type PoolGatewayConfig = z.infer<typeof poolGatewaySchema>;
