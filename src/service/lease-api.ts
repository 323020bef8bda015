import type { AppDeps } from "./deps";
import { HttpError } from "./errors";
import type { LeaseView } from "./fleet";
import type { Lease, ReleaseResult } from "./leases";
import { leaseBody, parseOr400, releaseBody, type leaseResponse, type releaseResponse } from "./schemas";
import type { z } from "zod";

/**
 * What POST /v1/leases and POST /v1/leases/:id/release do once the body is parsed and the token
 * checked. The Express routes (routes/discovery.ts) and the pre-Express fast path (fast-path.ts) both
 * call these, so validation, metrics, status codes and error shapes cannot drift apart.
 * Failures throw HttpError; success returns the status and the JSON body.
 */
export function acquireLease(deps: Pick<AppDeps, "fleet" | "metrics">, body: unknown): { status: 201; body: { lease: LeaseView } } {
    const req = parseOr400(leaseBody, body, "lease request");
    const t0 = process.hrtime.bigint();
    const result = deps.fleet.acquire(req);
    deps.metrics.leaseLatency.observe(Number(process.hrtime.bigint() - t0) / 1e9);
    if (!result.ok) {
        // A pool name nobody configured is the caller's mistake (404), not a series: it would let any
        // caller mint label values.
        if (result.reason === "unknown-pool") throw new HttpError(404, "unknown_pool", result.message);
        deps.metrics.lease(req.pool ?? "*", "unavailable");
        throw new HttpError(503, "none_available", result.message, undefined, { "Retry-After": String(result.retryAfterSeconds) });
    }
    deps.metrics.lease(result.lease.proxy.pool, "granted");
    if (result.session) deps.metrics.session(result.lease.proxy.pool, result.session);
    return { status: 201, body: { lease: result.lease } satisfies z.infer<typeof leaseResponse> };
}

export function releaseLease(deps: Pick<AppDeps, "fleet" | "metrics">, id: string, body: unknown): { status: 200; body: { released: true; lease: Lease } } {
    const { outcome } = parseOr400(releaseBody, body, "release request");
    const result = deps.fleet.release(id, outcome);
    if (!result.ok) {
        if (result.reason === "expired") throw expiredError(id, result);
        throw new HttpError(404, "unknown_lease", `no lease "${id}"`);
    }
    deps.metrics.releases.inc({ outcome });
    return { status: 200, body: { released: true as const, lease: result.lease } satisfies z.infer<typeof releaseResponse> };
}

/**
 * 410 for a lease that ended before its release. `proxy_removed` when its member was taken away — by
 * this service (a drain that ran out, a repair: `removal` says which and why) or by an update elsewhere
 * — so the crawler knows the proxy is gone for good, not merely back in the pool.
 */
function expiredError(id: string, r: Extract<ReleaseResult, { reason: "expired" }>): HttpError {
    const endedAt = new Date(r.endedAt).toISOString();
    if (r.cause === "ttl") return new HttpError(410, "lease_expired", `lease "${id}" already expired; its proxy went back to the pool`, { cause: "ttl", endedAt });
    const why = r.removal?.message ?? "its proxy left the stack (removed by an update outside this service)";
    return new HttpError(410, "proxy_removed", `lease "${id}" ended at ${endedAt}: ${why}`, { reason: r.removal?.reason ?? "removed", ...(r.removal ? { member: r.removal.member } : {}), endedAt });
}
