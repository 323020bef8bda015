import type { AppDeps } from "./deps";
import { HttpError } from "../http/errors";
import type { FleetAcquire, LeaseView } from "../fleet/fleet";
import type { Lease, ReleaseResult } from "../leases";
import { leaseBody, parseOr400, releaseBody, type leaseResponse, type releaseResponse } from "./schemas";
import type { MaybePromise } from "../store/types";
import { StoreUnavailableError } from "../../state/redis/unavailable";
import type { z } from "zod";

type Acquired = { status: 201; body: { lease: LeaseView } };
type Released = { status: 200; body: { released: true; lease: Lease } };

/**
 * What POST /v1/leases and POST /v1/leases/:id/release do once the body is parsed and the token
 * checked. The Express routes (routes/discovery.ts) and the pre-Express fast path (fast-path.ts) both
 * call these, so validation, metrics, status codes and error shapes cannot drift apart.
 * Failures throw HttpError; success returns the status and the JSON body — at once with the memory
 * store, as a promise with the Redis one (whose outage rejects with a 503 store_unavailable).
 */
export function acquireLease(deps: Pick<AppDeps, "fleet" | "metrics">, body: unknown): MaybePromise<Acquired> {
    const req = parseOr400(leaseBody, body, "lease request");
    if (req.zone !== undefined && req.where?.zone !== undefined && req.zone !== req.where.zone)
        throw new HttpError(
            "invalid_request",
            `lease request: \`zone\` "${req.zone}" and \`where.zone\` "${req.where.zone}" disagree; give one`,
        );
    const t0 = process.hrtime.bigint();
    const done = (result: FleetAcquire): Acquired => {
        deps.metrics.leaseLatency.observe(Number(process.hrtime.bigint() - t0) / 1e9);
        if (!result.ok) {
            // A pool name nobody configured is the caller's mistake (404), not a series: it would let any
            // caller mint label values.
            if (result.reason === "unknown-pool") throw new HttpError("unknown_pool", result.message);
            if (result.reason === "unknown-zone") throw new HttpError("unknown_zone", result.message);
            if (result.reason === "unknown-label") throw new HttpError("unknown_label", result.message);
            if (result.reason === "target-busy") {
                deps.metrics.politeness.held(result.pool, result.rule, "lease", "refused");
                throw new HttpError("target_busy", result.message, undefined, {
                    "Retry-After": String(result.retryAfterSeconds),
                });
            }
            deps.metrics.lease(req.pool ?? "*", "unavailable");
            throw new HttpError("none_available", result.message, undefined, {
                "Retry-After": String(result.retryAfterSeconds),
            });
        }
        deps.metrics.lease(result.lease.proxy.pool, "granted");
        if (result.session) deps.metrics.session(result.lease.proxy.pool, result.session);
        return { status: 201, body: { lease: result.lease } satisfies z.infer<typeof leaseResponse> };
    };
    const r = deps.fleet.acquire(req);
    return r instanceof Promise ? r.then(done, storeFailure) : done(r);
}

export function releaseLease(
    deps: Pick<AppDeps, "fleet" | "metrics">,
    id: string,
    body: unknown,
): MaybePromise<Released> {
    const { outcome } = parseOr400(releaseBody, body, "release request");
    const done = (result: ReleaseResult): Released => {
        if (!result.ok) {
            if (result.reason === "expired") throw expiredError(id, result);
            throw new HttpError("unknown_lease", `no lease "${id}"`);
        }
        deps.metrics.releases.inc({ outcome });
        return {
            status: 200,
            body: { released: true as const, lease: result.lease } satisfies z.infer<typeof releaseResponse>,
        };
    };
    const r = deps.fleet.release(id, outcome);
    return r instanceof Promise ? r.then(done, storeFailure) : done(r);
}

/** A store outage as the client sees it: 503 store_unavailable with Retry-After; anything else as it is. */
export function storeFailure(e: unknown): never {
    if (e instanceof StoreUnavailableError) throw storeUnavailable(e);
    throw e;
}

export function storeUnavailable(e: StoreUnavailableError): HttpError {
    return new HttpError("store_unavailable", e.message, undefined, {
        "Retry-After": String(e.retryAfterSeconds),
    });
}

/**
 * 410 for a lease that ended before its release. `proxy_removed` when its member was taken away — by
 * this service (a drain that ran out, a repair: `removal` says which and why) or by an update elsewhere
 * — so the crawler knows the proxy is gone for good, not merely back in the pool.
 */
function expiredError(id: string, r: Extract<ReleaseResult, { reason: "expired" }>): HttpError {
    const endedAt = new Date(r.endedAt).toISOString();
    if (r.cause === "ttl")
        return new HttpError("lease_expired", `lease "${id}" already expired; its proxy went back to the pool`, {
            cause: "ttl",
            endedAt,
        });
    const why = r.removal?.message ?? "its proxy left the stack (removed by an update outside this service)";
    return new HttpError("proxy_removed", `lease "${id}" ended at ${endedAt}: ${why}`, {
        reason: r.removal?.reason ?? "removed",
        ...(r.removal ? { member: r.removal.member } : {}),
        endedAt,
    });
}
