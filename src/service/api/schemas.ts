import { z } from "zod";
import { HttpError } from "../http/errors";
import { ERROR_CODES } from "../http/catalogue";
import { SCOPES } from "../http/auth";
import { sessionKeySchema } from "../leases/session-key";

/**
 * Request and response bodies of the HTTP API. Handlers validate with these, and /v1/openapi.json is
 * generated from the same objects, so the document cannot drift from what is enforced.
 */
export const scaleBody = z.strictObject({
    replicas: z
        .number()
        .int({ message: "must be a whole number" })
        .min(0, { message: "must be 0 or more" })
        .describe("Desired member count (0..maxReplicas)"),
});

export const leaseBody = z.strictObject({
    pool: z.string().min(1).max(63).optional().describe("Only lease from this pool"),
    target: z.string().min(1).max(253).optional().describe("Host the crawler will visit; enables per-target cooldown"),
    ttlSeconds: z
        .number()
        .int({ message: "must be a whole number" })
        .min(1)
        .max(3600)
        .optional()
        .describe("Lease lifetime; default 300"),
    session: sessionKeySchema
        .optional()
        .describe(
            "Sticky session key (scoped to `pool`): its leases get the same proxy while it stays healthy, not draining, not leased by someone else and not blocked for `target`; otherwise the session moves (`rebound: true`). Forgotten after the pool's `sessionTtlSeconds` (default 1800) without a live lease",
        ),
});

export const releaseBody = z.strictObject({
    outcome: z
        .enum(["ok", "blocked", "error"])
        .describe(
            "ok: fine; blocked: the target blocked this proxy (longer target cooldown); error: the proxy failed (counts against health)",
        ),
});

const isoTime = z.string().describe("RFC 3339 time");

/** POST /v1/blocks: a block the client saw, reported against the member the gateway used for it. */
export const blockBody = z.strictObject({
    pool: z.string().min(1).max(63).describe("The pool of the gateway request (its username's pool)"),
    target: z.string().min(1).max(253).describe("The host that blocked (the request's host, or its `_target_` option)"),
    session: z.string().min(1).max(64).optional().describe("The request's `_session_` key, if it had one"),
});

/** POST /v1/blocks → 200 */
export const blockResponse = z.object({
    blocked: z.object({
        proxy: z.string().describe("The member that served the request; it rests for the target"),
        pool: z.string(),
        target: z.string(),
        session: z.string().optional(),
        until: isoTime.describe(
            "When the member may serve the target again (the blocked cooldown: 60 s, doubling per repeated block, at most 1 h)",
        ),
    }),
});

export const proxiesQuery = z.strictObject({
    pool: z.string().min(1).optional().describe("Only this pool"),
    state: z.enum(["healthy", "unhealthy", "unknown"]).optional(),
    lifecycle: z.enum(["provisioning", "ready", "draining", "failed"]).optional(),
});

export const proxySchema = z
    .object({
        id: z.string(),
        pool: z.string(),
        provider: z.string(),
        kind: z.string(),
        index: z.number(),
        host: z.string(),
        port: z.number(),
        zone: z.string(),
        url: z
            .string()
            .describe(
                "http://host:port, what a crawler sets as its proxy. When the proxy requires credentials (`auth`), it carries them (http://user:pass@host:port) for tokens with the `lease` or `admin` scope only",
            ),
        auth: z
            .boolean()
            .optional()
            .describe("True when the proxy requires credentials (proxy basic auth); absent otherwise"),
        health: z.enum(["healthy", "unhealthy", "unknown"]),
        egressIp: z.string().optional(),
        probeLatencyMs: z
            .number()
            .optional()
            .describe("Round trip of the last health probe through this proxy, in milliseconds"),
        leased: z.boolean(),
        lifecycle: z
            .enum(["provisioning", "ready", "draining", "failed"])
            .describe(
                "provisioning: no address or no probe verdict yet; ready: healthy; draining: an operation removes or replaces it (never leased again; leases run until released or drainingUntil); failed: unhealthy, or an operation failed on it",
            ),
        lastError: z
            .string()
            .optional()
            .describe(
                "The last probe error while probes fail, or the last failed operation's error naming this member, whichever is newer",
            ),
        drainingUntil: z
            .string()
            .optional()
            .describe(
                "While draining: when a lease still running on it is ended (then its release answers 410 proxy_removed)",
            ),
    })
    .meta({ id: "Proxy" });

/** GET /v1/proxies */
export const proxiesResponse = z.object({ proxies: z.array(proxySchema) });

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
                "false when the pool's members follow its provider entry (a list of bring-your-own proxies): PUT /v1/pools/{pool}/replicas answers 400 not_scalable",
            ),
    })
    .meta({ id: "Pool" });
/** GET /v1/pools */
export const poolsResponse = z.object({ pools: z.array(poolSchema) });

/** The proxy part of a lease: where to send traffic. */
export const leaseViewSchema = z
    .object({
        id: z.string().describe("Lease id; release it with POST /v1/leases/{id}/release"),
        proxy: z.object({
            id: z.string(),
            pool: z.string(),
            provider: z.string(),
            zone: z.string(),
            host: z.string(),
            port: z.number().int(),
            url: z
                .string()
                .describe(
                    "http://host:port, usable as an HTTP(S) proxy URL; http://user:pass@host:port when the proxy requires credentials (`auth`)",
                ),
            auth: z.boolean().optional().describe("True when the proxy requires credentials; `url` carries them"),
        }),
        target: z.string().optional(),
        session: z
            .string()
            .optional()
            .describe("The sticky session this lease was taken for, when the request named one"),
        rebound: z
            .boolean()
            .optional()
            .describe(
                "With a session: true when the session moved to this proxy because its previous one was unhealthy, draining, leased by someone else, blocked for the target or gone; false when it kept its proxy or is new",
            ),
        leasedAt: isoTime,
        expiresAt: isoTime,
    })
    .meta({ id: "Lease" });
/** POST /v1/leases → 201 */
export const leaseResponse = z.object({ lease: leaseViewSchema });

/** POST /v1/leases/{id}/release → 200 (times in epoch milliseconds, as the lease manager keeps them). */
export const releaseResponse = z.object({
    released: z.literal(true),
    lease: z.object({
        id: z.string(),
        proxyId: z.string(),
        pool: z.string(),
        target: z.string().optional(),
        session: z.string().optional(),
        leasedAt: z.number().describe("epoch ms"),
        expiresAt: z.number().describe("epoch ms"),
    }),
});

/** GET /v1/whoami: the presenting token's name and scopes (never the token), so a client can follow them. */
export const whoamiSchema = z.object({ name: z.string(), scopes: z.array(z.enum(SCOPES)) }).meta({ id: "Whoami" });

/** GET /v1/leases: active leases without their ids (an id is what releases a lease). */
export const activeLeasesSchema = z
    .object({
        leases: z.array(
            z.object({
                proxy: z.string(),
                pool: z.string(),
                target: z.string().optional(),
                leasedAt: isoTime,
                expiresAt: isoTime,
            }),
        ),
    })
    .meta({ id: "ActiveLeases" });

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
        kind: z.enum(["scale", "up", "heal"]),
        status: z.enum(["queued", "running", "succeeded", "failed", "interrupted"]),
        desired: z.record(z.string(), z.number()).describe("Desired replicas per pool this operation applies"),
        requests: z.number().int().describe("Client requests folded into this operation (latest wins)"),
        createdAt: isoTime,
        startedAt: isoTime.optional(),
        finishedAt: isoTime.optional(),
        changes: z.record(z.string(), z.number()).optional(),
        applied: z.record(z.string(), z.number()).optional(),
        error: z.string().optional(),
        members: z.array(z.string()).optional(),
        reasons: z
            .record(z.string(), z.object({ reason: z.enum(["gone", "unhealthy"]), detail: z.string() }))
            .optional(),
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
});

export const echoResponse = z.object({ ip: z.string().describe("The caller's address as the service sees it") });
export const okResponse = z.object({ ok: z.literal(true) });

export const errorSchema = z
    .object({
        error: z.object({
            code: z.enum(ERROR_CODES).describe("Machine-readable; docs/api.md lists when each is used"),
            message: z.string(),
            details: z.unknown().optional(),
        }),
    })
    .meta({ id: "Error" });

/** Parses `value` or throws a 400 whose details list each field and rule. */
export function parseOr400<T extends z.ZodType>(schema: T, value: unknown, what: string): z.infer<T> {
    const r = schema.safeParse(value ?? {});
    if (r.success) return r.data;
    const details = r.error.issues.map((i) => ({
        field: i.path.join(".") || "(body)",
        rule: i.code === "unrecognized_keys" ? `unknown field(s) ${i.keys.join(", ")}` : i.message,
    }));
    throw new HttpError(
        "invalid_request",
        `invalid ${what}: ${details.map((d) => `${d.field}: ${d.rule}`).join("; ")}`,
        details,
    );
}
