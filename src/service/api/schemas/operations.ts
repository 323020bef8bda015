/**
 * Operations (scale, up, heal, autoscale, rotate) as the journal records them, their progress events,
 * and the routes that answer with them: GET /v1/operations[/{id}], and the 202 of a scale request.
 */
import { z } from "zod";
import { isoTime } from "./common";
import { autoscaleRecordSchema, rotationRecordSchema } from "./control";

export const progressEventSchema = z
    .object({
        at: isoTime,
        kind: z.enum(["resource-start", "resource-done", "resource-failed", "diagnostic", "summary"]),
        op: z.string().optional(),
        type: z.string().optional(),
        name: z.string().optional(),
        message: z.string().optional(),
        severity: z.string().optional(),
        changes: z.record(z.string(), z.number()).optional(),
    })
    .meta({ id: "ProgressEvent" });

export const operationSchema = z
    .object({
        id: z.string(),
        kind: z
            .enum(["scale", "up", "heal", "autoscale", "rotate"])
            .describe(
                "autoscale: the autoscaler decided `desired` (see `autoscale` for why); rotate: members replaced by age or blocks (see `rotations`)",
            ),
        status: z.enum(["queued", "running", "succeeded", "failed", "interrupted"]),
        desired: z.record(z.string(), z.number()).describe("Desired replicas per pool this operation applies"),
        requests: z.number().int().describe("Client requests folded into this operation (latest wins)"),
        requestIds: z
            .array(z.string())
            .optional()
            .describe("Ids followers answered scale requests with that were folded into this operation: each finds it"),
        createdAt: isoTime,
        startedAt: isoTime.optional(),
        finishedAt: isoTime.optional(),
        changes: z.record(z.string(), z.number()).optional(),
        applied: z.record(z.string(), z.number()).optional(),
        error: z.string().optional(),
        members: z.array(z.string()).optional(),
        reasons: z
            .record(
                z.string(),
                z.object({ reason: z.enum(["gone", "unhealthy", "age", "blocked", "changed"]), detail: z.string() }),
            )
            .optional(),
        autoscale: z
            .record(z.string(), autoscaleRecordSchema)
            .optional()
            .describe("The autoscale decisions this operation applies, per pool"),
        rotations: z
            .array(rotationRecordSchema)
            .optional()
            .describe("rotate: each member replaced, the surge member that stood in, and the egress IPs seen"),
        rolling: z
            .object({
                pool: z.string(),
                replicas: z.number().int().describe("The pool's count, kept throughout (the surge stands above it)"),
                batch: z.number().int().describe("The batch running now, from 1"),
                of: z.number().int().describe("Batches of this pool"),
                members: z.array(z.string()).describe("The members this batch replaces"),
                surge: z.array(z.string()).describe("Members standing in above the pool's replicas"),
                replaced: z.array(z.string()).describe("Members replaced so far (all pools)"),
            })
            .optional()
            .describe(
                "scale/up/autoscale whose update replaces members: the rolling change's batch (docs/operations.md)",
            ),
        drain: z
            .object({
                draining: z.boolean(),
                members: z.array(
                    z.object({
                        member: z.string(),
                        reason: z.enum(["scaled-down", "replaced", "gone"]),
                        until: isoTime,
                        state: z.enum(["waiting", "idle", "timed-out", "kept"]),
                    }),
                ),
            })
            .optional(),
        waitingForLock: z
            .object({
                holder: z.string().describe('Who holds the stack\'s writer lock, e.g. "pid 4242 (egress up)"'),
                since: isoTime.describe("When this operation began waiting"),
            })
            .optional()
            .describe(
                "While a started operation waits for the writer lock another egress command holds: nothing is applied until it ends",
            ),
    })
    .meta({ id: "Operation" });

/** GET /v1/operations */
export const operationsResponse = z.object({ operations: z.array(operationSchema) });

/** GET /v1/operations/{id} */
export const operationResponse = z.object({
    operation: operationSchema,
    events: z.number().int().describe("Progress events so far (stream them from /events)"),
});

/** PUT /v1/pools/{pool}/replicas → 202 */
export const scaleResponse = z.object({ operation: operationSchema });
