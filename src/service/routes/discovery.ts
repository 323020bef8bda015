import { Router } from "express";
import type { AppDeps } from "../app";
import { HttpError } from "../errors";
import { leaseBody, parseOr400, proxiesQuery, releaseBody } from "../schemas";

/** Discovery (GET /v1/proxies) and leases (POST /v1/leases, POST /v1/leases/:id/release). */
export function discoveryRoutes(deps: AppDeps): Router {
    const r = Router();
    r.get("/v1/proxies", deps.auth("discover"), (req, res) => {
        const q = parseOr400(proxiesQuery, req.query, "query");
        res.json({ proxies: deps.fleet.proxies(q) });
    });
    r.post("/v1/leases", deps.auth("lease"), (req, res) => {
        const body = parseOr400(leaseBody, req.body, "lease request");
        const t0 = process.hrtime.bigint();
        const result = deps.fleet.acquire(body);
        deps.metrics.leaseLatency.observe(Number(process.hrtime.bigint() - t0) / 1e6);
        if (!result.ok) {
            deps.metrics.leases.inc({ pool: body.pool ?? "*", result: "unavailable" });
            if (result.reason === "unknown-pool") throw new HttpError(404, "unknown_pool", result.message);
            throw new HttpError(503, "none_available", result.message, undefined, { "Retry-After": String(result.retryAfterSeconds) });
        }
        deps.metrics.leases.inc({ pool: result.lease.proxy.pool, result: "granted" });
        res.status(201).json({ lease: result.lease });
    });
    r.post("/v1/leases/:id/release", deps.auth("lease"), (req, res) => {
        const { outcome } = parseOr400(releaseBody, req.body, "release request");
        const result = deps.fleet.release(req.params.id as string, outcome);
        if (!result.ok) {
            if (result.reason === "expired") throw new HttpError(410, "lease_expired", `lease "${req.params.id}" already expired; its proxy went back to the pool`);
            throw new HttpError(404, "unknown_lease", `no lease "${req.params.id}"`);
        }
        deps.metrics.releases.inc({ outcome });
        res.json({ released: true, lease: result.lease });
    });
    return r;
}
