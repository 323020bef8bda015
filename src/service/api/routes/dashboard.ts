import { Router } from "express";
import type { AppDeps } from "../deps";
import { SCOPES, type AuthenticatedRequest } from "../../http/auth";

/** The read routes the dashboard needs beyond discovery: who am I, active leases, the last hour's timeline. */
export function dashboardRoutes(deps: AppDeps): Router {
    const r = Router();
    r.get("/v1/whoami", deps.auth(), (req, res) => {
        const a = req as AuthenticatedRequest;
        // The CLI's unix socket admits without a token: its scope is the file permission, i.e. everything.
        res.json(
            a.tokenName === undefined
                ? { name: "local socket", scopes: [...SCOPES] }
                : { name: a.tokenName, scopes: a.tokenScopes ?? [] },
        );
    });
    r.get("/v1/leases", deps.auth("discover"), (_req, res) => {
        res.json({ leases: deps.fleet.activeLeases() });
    });
    r.get("/v1/timeline", deps.auth("discover"), async (_req, res) => {
        const { points, stale } = await deps.timeline.read();
        // The store could not be read (replicas): the last samples read, 200 all the same (a picture, not
        // a decision), flagged in a header so the body keeps its documented shape.
        if (stale) res.setHeader("X-Egress-Stale", "timeline: the store cannot be read; last samples read");
        res.json({ intervalSeconds: deps.timeline.intervalMs / 1000, points });
    });
    return r;
}
