import { Router } from "express";
import type { z } from "zod";
import type { AppDeps } from "../deps";
import type { AuthenticatedRequest } from "../../http/auth";
import { HttpError } from "../../http/errors";
import { storeFailure } from "../lease-api";
import { blockBody, type blockResponse, parseOr400 } from "../schemas";

/**
 * POST /v1/blocks: the client tells the service that a gateway request was blocked where the gateway
 * could not see it (inside a CONNECT tunnel, or a block page with status 200). The member named by
 * `proxy` (the answer's `X-Egress-Proxy`), which must have served the token's (pool, session, target)
 * lately, or else the one that served its last such request, rests for the target as after a `blocked`
 * release. Only the reporting token's own requests are looked up, so one client cannot bench another's.
 */
export function blockRoutes(deps: AppDeps): Router {
    const r = Router();
    r.post("/v1/blocks", deps.auth("lease"), async (req, res) => {
        const body = parseOr400(blockBody, req.body, "block report");
        if (!deps.gateway)
            throw new HttpError(
                "gateway_off",
                "the gateway is off (egress serve --gateway-port 0), so it served nothing to report a block about",
            );
        const got = await Promise.resolve(
            deps.gateway.reportBlock(
                {
                    client: (req as AuthenticatedRequest).tokenName,
                    pool: body.pool,
                    session: body.session,
                    target: body.target,
                },
                body.proxy,
            ),
        ).catch(storeFailure);
        if (!got.ok) throw new HttpError("not_served", got.message);
        const blocked = {
            proxy: got.proxyId,
            pool: body.pool,
            target: body.target.toLowerCase(),
            ...(body.session ? { session: body.session } : {}),
            until: new Date(got.until).toISOString(),
        };
        res.json({ blocked } satisfies z.infer<typeof blockResponse>);
    });
    return r;
}
