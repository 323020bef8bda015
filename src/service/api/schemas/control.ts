/**
 * Bodies of the routes that change or watch the fleet: pools and scale, the timeline, provider checks,
 * heal and the cluster (operations and their events: operations.ts).
 */
import { z } from "zod";
import { isoTime } from "./common";

export const scaleBody = z.strictObject({
    replicas: z
        .number()
        .int({ message: "must be a whole number" })
        .min(0, { message: "must be 0 or more" })
        .describe("Desired member count (0..maxReplicas)"),
});

const autoscaleSignals = {
    leased: z.number().describe("Mean leased members per sample over the window"),
    healthy: z.number().describe("Mean healthy members per sample over the window"),
    utilization: z.number().describe("Mean of leased / healthy per sample"),
    refusedLeases: z.number().int().describe("Lease requests answered 503 none_available in the window"),
    refusedGateway: z.number().int().describe("Gateway requests that found no member in the window"),
    samples: z.number().int(),
};

/** One autoscale decision with the signals behind it (src/service/control/autoscale/decide.ts). */
export const autoscaleRecordSchema = z
    .object({
        at: isoTime,
        from: z.number().int(),
        to: z.number().int(),
        demand: z.number().describe("Members' worth of work: leased members plus refused requests per sample"),
        wanted: z.number().int().describe("ceil(demand / targetUtilization) clamped to [min, max]"),
        reasons: z.array(z.string()),
        signals: z.object(autoscaleSignals),
    })
    .meta({ id: "AutoscaleDecision" });

const poolAutoscaleSchema = z
    .object({
        min: z.number().int(),
        max: z.number().int(),
        targetUtilization: z.number(),
        scaleDownAfterSeconds: z.number().int(),
        cooldownSeconds: z.number().int(),
        signals: z
            .object({
                ...autoscaleSignals,
                demand: z.number(),
                wanted: z.number().int(),
                holding: z.string().optional().describe("Why the last round changed nothing"),
            })
            .optional()
            .describe("The last round's signals (absent before the first round, and on replicas that do not lead)"),
        lastDecision: autoscaleRecordSchema
            .extend({ operation: z.string() })
            .optional()
            .describe("The last scale decision this replica made, and its operation"),
    })
    .describe("Set when the pool follows demand (its stack config's `autoscale`)");

/** One member a rotate operation replaces (src/state/operations/operation.ts RotationRecord). */
export const rotationRecordSchema = z
    .object({
        member: z.string(),
        pool: z.string(),
        reason: z
            .enum(["age", "blocked"])
            .describe("age: past rotateAfterSeconds; blocked: its rotateOnBlocks window tripped (see `detail`)"),
        createdAt: isoTime
            .optional()
            .describe("When the member being replaced was created (state's creation stamp; always set for age)"),
        dueAt: isoTime
            .optional()
            .describe("age: when it was due: created + rotateAfterSeconds, brought forward by its jitter (up to 10%)"),
        detail: z.string().optional().describe('blocked: "7 of 10 outcomes blocked in the last 300 s (ratio 0.5)"'),
        surge: z.string().optional().describe("The member added first, and removed once the replacement was healthy"),
        oldEgressIp: z.string().optional().describe("Egress IP the health probes saw before (absent when unknown)"),
        newEgressIp: z.string().optional().describe("Egress IP the health probes saw after the replacement"),
        replacedAt: isoTime.optional().describe("When the replacement passed its health check"),
        reusedIp: z
            .boolean()
            .optional()
            .describe("True when newEgressIp is one the pool's members had within its ipMemorySeconds"),
    })
    .meta({ id: "RotationRecord" });

const poolRotationSchema = z
    .object({
        rotateAfterSeconds: z.number().int().optional(),
        rotateOnBlocks: z
            .object({ ratio: z.number(), minOutcomes: z.number().int(), windowSeconds: z.number() })
            .optional(),
        maxSurge: z.number().int(),
        ipMemorySeconds: z.number().int(),
        nextDueAt: isoTime.optional().describe("The earliest deadline among the pool's members (past while one waits)"),
        holding: z.string().optional().describe("Why members that are due wait"),
        poolWideBlock: z
            .object({ since: isoTime, members: z.array(z.string()), detail: z.string() })
            .optional()
            .describe(
                "Set while more than half of the pool's members trip rotateOnBlocks at once: the site blocks the pool, so none is replaced for blocks until it clears",
            ),
        lastRotation: z
            .object({
                operation: z.string(),
                status: z.enum(["queued", "running", "succeeded", "failed", "interrupted"]),
                at: isoTime,
                rotations: z.array(rotationRecordSchema),
            })
            .optional()
            .describe("The last rotation this replica ran"),
    })
    .describe(
        "Set when the pool rotates its members by age or blocks (its stack config's `rotateAfterSeconds`, `rotateOnBlocks`)",
    );

export const poolSchema = z
    .object({
        name: z.string(),
        provider: z.string(),
        desired: z
            .number()
            .int()
            .describe("Desired members: the last accepted scale request, else the configured replicas"),
        maxReplicas: z.number().int(),
        actual: z.number().int(),
        healthy: z.number().int(),
        leased: z.number().int(),
        draining: z.number().int().describe("Members an operation is taking away (never leased again)"),
        scalable: z
            .boolean()
            .describe(
                "false when the pool's members follow its provider entry (a list of bring-your-own proxies): PUT /v1/pools/{pool}/replicas answers 400 not_scalable; or when it is autoscaled (409 autoscaled)",
            ),
        autoscale: poolAutoscaleSchema.optional(),
        rotation: poolRotationSchema.optional(),
    })
    .meta({ id: "Pool" });

/** GET /v1/pools */
export const poolsResponse = z.object({ pools: z.array(poolSchema) });

/** GET /v1/timeline: healthy and leased members per pool, sampled every `intervalSeconds`, oldest first. */
export const timelineSchema = z
    .object({
        intervalSeconds: z.number(),
        points: z.array(
            z.object({
                at: isoTime,
                pools: z.record(z.string(), z.object({ healthy: z.number().int(), leased: z.number().int() })),
            }),
        ),
    })
    .meta({ id: "Timeline" });

/** GET /v1/providers/health */
export const providersHealthResponse = z.object({
    providers: z.array(
        z.object({
            provider: z.string(),
            kind: z.string(),
            ok: z.boolean(),
            targets: z.array(
                z.object({
                    target: z.string(),
                    ok: z.boolean(),
                    stage: z.string().optional(),
                    message: z.string(),
                    details: z.record(z.string(), z.unknown()).optional(),
                    checkedAt: isoTime,
                    since: isoTime,
                }),
            ),
        }),
    ),
});

const decisionBase = {
    member: z.string(),
    pool: z.string(),
    reason: z.enum(["gone", "unhealthy"]),
    detail: z.string(),
};

/** GET /v1/heal */
export const healResponse = z.object({
    enabled: z.boolean(),
    intervalSeconds: z.number(),
    lastRound: z
        .object({
            at: isoTime,
            durationMs: z.number(),
            members: z.number().int(),
            skipped: z.string().optional(),
            decisions: z.array(
                z.union([
                    z.object({ ...decisionBase, action: z.literal("repair") }),
                    z.object({
                        ...decisionBase,
                        action: z.literal("skip"),
                        skip: z.enum(["backoff", "provider-unhealthy", "max-surge"]),
                        until: z.number().optional().describe("epoch ms"),
                        why: z.string(),
                    }),
                ]),
            ),
        })
        .optional(),
    providersDown: z.array(z.object({ provider: z.string(), reason: z.string() })),
    backoff: z.array(z.object({ member: z.string(), failures: z.number().int(), retryAt: isoTime })),
    convergence: z
        .object({
            failures: z.number().int(),
            retryAt: isoTime,
            operation: z.string(),
            error: z.string(),
        })
        .optional()
        .describe("Set while a scale, autoscale or up that failed transiently waits for the loop to run `up` again"),
});

const replicaSchema = z
    .object({
        id: z.string().describe("host-pid-random, new on every start"),
        url: z.string().describe("Where its API answers (followers forward leader-only requests here)"),
        gatewayUrl: z.string().optional(),
        version: z.string(),
        pid: z.number().int(),
        host: z.string(),
        startedAt: isoTime,
        lastHeartbeat: isoTime.describe("Its own clock, when it last wrote its record"),
        home: z.string().optional().describe("The id of the EGRESS_HOME it runs from"),
        scope: z
            .string()
            .optional()
            .describe(
                "What replicas of the stack share: their home id (a file backend, or members that are processes of one host: one home, one host), or `config:<hash>` of the stack file on a shared backend (several hosts)",
            ),
        leader: z.boolean(),
    })
    .meta({ id: "Replica" });

export const clusterResponse = z
    .object({
        self: z.string().describe("The id of the replica that answered"),
        store: z
            .enum(["memory", "redis"])
            .describe("memory: one process, no replicas; redis: replicas share the store"),
        leader: z
            .object({
                id: z.string(),
                token: z.number().int().describe("Fencing token: grows with every change of leader"),
                since: isoTime,
                command: z
                    .string()
                    .optional()
                    .describe("Set when an egress command (CLI `egress up` etc.) holds the lock, not a replica"),
                host: z.string().optional().describe("The machine of the command holding the lock"),
                pid: z.number().int().optional().describe("The process of the command holding the lock"),
            })
            .nullable()
            .describe("null while no replica holds the leader lock (an election takes a few seconds)"),
        replicas: z.array(replicaSchema).describe("The replicas with a heartbeat in the last few seconds"),
    })
    .meta({ id: "Cluster" });
