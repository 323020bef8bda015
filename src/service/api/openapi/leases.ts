/** The crawler's routes: proxies, leases, releases and block reports. */
import * as s from "../schemas";
import { type Op, json, retryAfter, error, withBody, idParams } from "./helpers";

export const LEASES_OPERATIONS: Op[] = [
    {
        method: "get",
        path: "/v1/proxies",
        scope: "discover",
        tags: ["discovery"],
        operationId: "listProxies",
        summary: "Live proxies, filterable",
        request: { query: s.proxiesQuery },
        responses: { "200": json(s.proxiesResponse, "Proxies") },
    },
    {
        method: "post",
        path: "/v1/leases",
        scope: "lease",
        tags: ["leases"],
        operationId: "lease",
        summary:
            "Lease one healthy, unleased proxy out of cooldown, least recently used first (or a sticky session's proxy)",
        request: { body: { required: false, content: { "application/json": { schema: s.leaseBody } } } },
        responses: {
            "201": json(s.leaseResponse, "The lease"),
            "404": error("`unknown_pool`: the requested pool is not configured"),
            "429": error(
                "`target_busy`: the pool's per-site politeness (`targets`: maxConcurrency, minIntervalMs) is all that stops a lease for this target; Retry-After says when to try again",
                retryAfter,
            ),
            "503": error(
                "`none_available` (every member leased, cooling, unhealthy or resting for this target; or no members) or `not_ready`; Retry-After says when to try again",
                retryAfter,
            ),
            ...withBody,
        },
    },
    {
        method: "post",
        path: "/v1/leases/{id}/release",
        scope: "lease",
        tags: ["leases"],
        operationId: "release",
        summary: "Release a lease with its outcome",
        request: {
            params: idParams("Lease id"),
            body: { required: true, content: { "application/json": { schema: s.releaseBody } } },
        },
        responses: {
            "200": json(s.releaseResponse, "Released"),
            "404": error("`unknown_lease`: never issued, or released already"),
            "410": error(
                "Lease already ended: `lease_expired` (its TTL ran out) or `proxy_removed` (its proxy was scaled away, replaced or gone; details.reason says which: scaled-down, replaced, gone, removed)",
            ),
            ...withBody,
        },
    },
    {
        method: "post",
        path: "/v1/blocks",
        scope: "lease",
        tags: ["leases"],
        operationId: "reportBlock",
        summary: "Report a block the gateway could not see; the member that served it rests for the target",
        description:
            "For requests through the rotating gateway (`egress serve --gateway-port`): a CONNECT tunnel carries TLS the gateway cannot read, and some blocks are pages with status 200. The member that served this token's last gateway request for (pool, session, target), within the last 10 minutes, rests for the target as after a `blocked` release (60 s, doubling per repeated block, at most 1 h). Only the reporting token's own requests are looked up.",
        request: { body: { required: true, content: { "application/json": { schema: s.blockBody } } } },
        responses: {
            "200": json(s.blockResponse, "The member now rests for the target"),
            "404": error(
                "`not_served`: the gateway served this token no request for (pool, session, target) in the last 10 minutes, or its member has left; `gateway_off`: the gateway is off",
            ),
            ...withBody,
        },
    },
];
