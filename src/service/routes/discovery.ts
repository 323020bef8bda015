import { Router } from "express";
import type { AppDeps } from "../app";
import { acquireLease, releaseLease } from "../lease-api";
import { parseOr400, proxiesQuery, type proxiesResponse } from "../schemas";
import type { z } from "zod";

/**
 * Discovery (GET /v1/proxies) and leases (POST /v1/leases, POST /v1/leases/:id/release). Plain lease
 * requests are usually answered by fast-path.ts before Express sees them; these routes serve the rest
 * (other content types, encodings, chunked bodies, escaped ids) with the same logic from lease-api.ts.
 */
export function discoveryRoutes(deps: AppDeps): Router {
    const r = Router();
    r.get("/v1/proxies", deps.auth("discover"), (req, res) => {
        const q = parseOr400(proxiesQuery, req.query, "query");
        res.json({ proxies: deps.fleet.proxies(q) } satisfies z.infer<typeof proxiesResponse>);
    });
    r.post("/v1/leases", deps.auth("lease"), (req, res) => {
        const out = acquireLease(deps, req.body);
        res.status(out.status).json(out.body);
    });
    r.post("/v1/leases/:id/release", deps.auth("lease"), (req, res) => {
        const out = releaseLease(deps, req.params.id as string, req.body);
        res.status(out.status).json(out.body);
    });
    return r;
}
