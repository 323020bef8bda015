import { Router } from "express";
import type { AppDeps } from "../deps";
import { acquireLease, releaseLease } from "../lease-api";
import { parseOr400, proxiesQuery, type proxiesResponse } from "../schemas";
import type { z } from "zod";
import type { AuthenticatedRequest } from "../../http/auth";

/**
 * Discovery (GET /v1/proxies) and leases (POST /v1/leases, POST /v1/leases/:id/release). Plain lease
 * requests are usually answered by fast-path.ts before Express sees them; these routes serve the rest
 * (other content types, encodings, chunked bodies, escaped ids) with the same logic from lease-api.ts.
 */
export function discoveryRoutes(deps: AppDeps): Router {
    const r = Router();
    r.get("/v1/proxies", deps.auth("discover"), (req, res) => {
        const q = parseOr400(proxiesQuery, req.query, "query");
        // Credentials go only to tokens that may lease (`lease`, `admin`); a discover-only token sees `auth: true`.
        const scopes = (req as AuthenticatedRequest).tokenScopes ?? [];
        const withCredentials = scopes.includes("lease") || scopes.includes("admin");
        res.json({
            proxies: deps.fleet.proxies(q, { withCredentials }),
            ...(deps.verdicts && { verdicts: deps.verdicts() }),
        } satisfies z.infer<typeof proxiesResponse>);
    });
    r.post("/v1/leases", deps.auth("lease"), async (req, res) => {
        const out = await acquireLease(deps, req.body);
        res.status(out.status).json(out.body);
    });
    r.post("/v1/leases/:id/release", deps.auth("lease"), async (req, res) => {
        const out = await releaseLease(deps, req.params.id as string, req.body);
        res.status(out.status).json(out.body);
    });
    return r;
}
