import { z } from "zod";
import { HttpError } from "./errors";
import { SCOPES } from "./auth";

/**
 * Request and response bodies of the HTTP API. Handlers validate with these, and /v1/openapi.json is
 * generated from the same objects, so the document cannot drift from what is enforced.
 */
export const scaleBody = z.strictObject({
    replicas: z.number().int({ message: "must be a whole number" }).min(0, { message: "must be 0 or more" }).describe("Desired member count (0..maxReplicas)"),
});

export const leaseBody = z.strictObject({
    pool: z.string().min(1).max(63).optional().describe("Only lease from this pool"),
    target: z.string().min(1).max(253).optional().describe("Host the crawler will visit; enables per-target cooldown"),
    ttlSeconds: z.number().int({ message: "must be a whole number" }).min(1).max(3600).optional().describe("Lease lifetime; default 300"),
});

export const releaseBody = z.strictObject({
    outcome: z.enum(["ok", "blocked", "error"]).describe("ok: fine; blocked: the target blocked this proxy (longer target cooldown); error: the proxy failed (counts against health)"),
});

export const proxiesQuery = z.strictObject({
    pool: z.string().min(1).optional(),
    state: z.enum(["healthy", "unhealthy", "unknown"]).optional(),
    lifecycle: z.enum(["provisioning", "ready", "draining", "failed"]).optional(),
});

export const proxySchema = z.object({
    id: z.string(), pool: z.string(), provider: z.string(), kind: z.string(), index: z.number(),
    host: z.string(), port: z.number(), url: z.string(), zone: z.string(),
    health: z.enum(["healthy", "unhealthy", "unknown"]),
    egressIp: z.string().optional(),
    probeLatencyMs: z.number().optional().describe("Round trip of the last health probe through this proxy, in milliseconds"),
    leased: z.boolean(),
    lifecycle: z.enum(["provisioning", "ready", "draining", "failed"]).describe("provisioning: no address or no probe verdict yet; ready: healthy; draining: an operation removes or replaces it (never leased again; leases run until released or drainingUntil); failed: unhealthy, or an operation failed on it"),
    lastError: z.string().optional().describe("The last probe error while probes fail, or the last failed operation's error naming this member, whichever is newer"),
    drainingUntil: z.string().optional().describe("While draining: when a lease still running on it is ended (then its release answers 410 proxy_removed)"),
});

export const poolSchema = z.object({
    name: z.string(), provider: z.string(), desired: z.number().int(), maxReplicas: z.number().int(),
    actual: z.number().int(), healthy: z.number().int(), leased: z.number().int(),
    draining: z.number().int().describe("Members an operation is taking away (never leased again)"),
});

/** GET /v1/whoami: the presenting token's name and scopes (never the token), so a client can follow them. */
export const whoamiSchema = z.object({ name: z.string(), scopes: z.array(z.enum(SCOPES)) });

/** GET /v1/leases: active leases without their ids (an id is what releases a lease). */
export const activeLeasesSchema = z.object({
    leases: z.array(z.object({ proxy: z.string(), pool: z.string(), target: z.string().optional(), leasedAt: z.string(), expiresAt: z.string() })),
});

/** GET /v1/timeline: healthy and leased members per pool, sampled every `intervalSeconds`, oldest first. */
export const timelineSchema = z.object({
    intervalSeconds: z.number(),
    points: z.array(z.object({ at: z.string(), pools: z.record(z.string(), z.object({ healthy: z.number().int(), leased: z.number().int() })) })),
});

export const errorSchema = z.object({ error: z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() }) });

/** Parses `value` or throws a 400 whose details list each field and rule. */
export function parseOr400<T extends z.ZodType>(schema: T, value: unknown, what: string): z.infer<T> {
    const r = schema.safeParse(value ?? {});
    if (r.success) return r.data;
    const details = r.error.issues.map((i) => ({ field: i.path.join(".") || "(body)", rule: i.code === "unrecognized_keys" ? `unknown field(s) ${i.keys.join(", ")}` : i.message }));
    throw new HttpError(400, "invalid_request", `invalid ${what}: ${details.map((d) => `${d.field}: ${d.rule}`).join("; ")}`, details);
}
