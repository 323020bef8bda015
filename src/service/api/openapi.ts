import {
    OpenAPIRegistry,
    OpenApiGeneratorV31,
    type ResponseConfig,
    type RouteConfig,
} from "@asteasolutions/zod-to-openapi";
import { z } from "zod";
import type { Scope } from "../http/auth";
import * as s from "./schemas";

/**
 * OpenAPI 3.1 for every route the service answers, generated from the zod schemas the handlers
 * validate and type their bodies with (schemas.ts), so the document cannot drift from the code.
 * test/service/openapi.test.ts fails when a served route is missing here or a real answer does not
 * match its schema.
 */

const json = (schema: z.ZodType, description: string): ResponseConfig => ({
    description,
    content: { "application/json": { schema } },
});
const retryAfter = z.object({ "Retry-After": z.string().describe("Seconds to wait before trying again") });
const error = (description: string, headers?: z.ZodObject): ResponseConfig => ({
    ...json(s.errorSchema, description),
    ...(headers ? { headers } : {}),
});

/** Answers any route can give: credentials in the query, a malformed body (express.json reads every request), stopping. */
const anyRoute = {
    "400": error(
        "Bad request: `token_in_url` (a credential-like query parameter; never use it), `malformed_json`, `invalid_request` (details list each field and rule)",
    ),
    "503": error("`not_ready`: the service is stopping (or not ready yet); try again after Retry-After", retryAfter),
};
const withBody = {
    "413": error("`body_too_large`: bodies are limited to 16 KiB"),
    "415": error("`unsupported_encoding`: only identity/gzip/deflate/br UTF-8 JSON bodies are read"),
};
const authErrors = {
    "401": error("`unauthenticated`: no or an unknown bearer token", z.object({ "WWW-Authenticate": z.string() })),
    "403": error("`forbidden`: the token lacks this route's scope (admin implies every scope)"),
};

/** Security scheme per scope, so each operation names exactly the scope it needs. */
const schemeOf = (scope: Scope) => `${scope}Token`;
const ALL_SCOPES = ["discover", "lease", "scale", "admin"] as const;
/** `any`: a valid token of any scope (GET /v1/whoami). */
type OpScope = Scope | "any";
const secured = (scope: OpScope) => ({
    security:
        scope === "any"
            ? ALL_SCOPES.map((sc) => ({ [schemeOf(sc)]: [] }))
            : scope === "admin"
              ? [{ adminToken: [] }]
              : [{ [schemeOf(scope)]: [] }, { adminToken: [] }],
    "x-egress-scope": scope,
});

interface Op {
    method: RouteConfig["method"];
    path: string;
    scope?: OpScope;
    summary: string;
    description?: string;
    tags: string[];
    operationId: string;
    request?: RouteConfig["request"];
    responses: Record<string, ResponseConfig>;
    /** Routes that stay answered while stopping (no 503 not_ready) and take no body. */
    alwaysOn?: boolean;
}

const poolParams = z.object({ pool: z.string().describe("Pool name from egress:pools") });
const idParams = (what: string) => z.object({ id: z.string().describe(what) });

/** Every operation, in the order /docs shows them. */
export const OPERATIONS: Op[] = [
    {
        method: "get",
        path: "/v1/pools",
        scope: "discover",
        tags: ["pools"],
        operationId: "listPools",
        summary: "Pools with desired, actual, healthy and leased counts",
        responses: { "200": json(s.poolsResponse, "Pools") },
    },
    {
        method: "put",
        path: "/v1/pools/{pool}/replicas",
        scope: "scale",
        tags: ["pools"],
        operationId: "scalePool",
        summary: "Set a pool's desired replicas; applied by one engine operation (latest request wins)",
        request: {
            params: poolParams,
            body: { required: true, content: { "application/json": { schema: s.scaleBody } } },
        },
        responses: {
            "202": {
                ...json(s.scaleResponse, "Accepted; the body is the operation that applies it"),
                headers: z.object({ Location: z.string().describe("/v1/operations/{id}") }),
            },
            "400": error(
                "Bad request: `invalid_request` (details list each field and rule), `not_scalable` (the pool's provider fixes its members, e.g. a list of existing proxies), `token_in_url`, `malformed_json`",
            ),
            "404": error("`unknown_pool`"),
            ...withBody,
        },
    },
    {
        method: "get",
        path: "/v1/operations",
        scope: "scale",
        tags: ["operations"],
        operationId: "listOperations",
        summary: "Recent engine operations (scale, up, heal)",
        responses: { "200": json(s.operationsResponse, "Operations") },
    },
    {
        method: "get",
        path: "/v1/operations/{id}",
        scope: "scale",
        tags: ["operations"],
        operationId: "getOperation",
        summary: "An engine operation",
        request: { params: idParams("Operation id (op_…)") },
        responses: { "200": json(s.operationResponse, "The operation"), "404": error("`unknown_operation`") },
    },
    {
        method: "get",
        path: "/v1/operations/{id}/events",
        scope: "scale",
        tags: ["operations"],
        operationId: "streamOperationEvents",
        summary: "Server-Sent Events of the operation's progress",
        description:
            "`status` events (the operation, at creation and at each change) and `progress` events (engine progress, resource by resource), each with an `id:` counting up from 1. Send `Last-Event-ID` to get only the events after it (from a buffer of the last 1000). A `: ping` comment comes every 15 s while the operation runs; the stream ends when it settles.",
        request: {
            params: idParams("Operation id (op_…)"),
            headers: z.object({
                "Last-Event-ID": z
                    .string()
                    .optional()
                    .describe("Resume after this event id (replayed from a bounded buffer)"),
            }),
        },
        responses: {
            "200": {
                description:
                    "text/event-stream; each event's `data:` is JSON: a ProgressEvent for `progress`, an Operation for `status`",
                content: {
                    "text/event-stream": {
                        schema: z.string(),
                        itemSchema: z.union([s.progressEventSchema, s.operationSchema]),
                    },
                },
            },
            "404": error("`unknown_operation`"),
        },
    },
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
    {
        method: "get",
        path: "/v1/whoami",
        scope: "any",
        tags: ["system"],
        operationId: "whoami",
        summary: "The presenting token's name and scopes (never the token); any valid token",
        responses: { "200": json(s.whoamiSchema, "Who this token is") },
    },
    {
        method: "get",
        path: "/v1/leases",
        scope: "discover",
        tags: ["leases"],
        operationId: "listLeases",
        summary: "Active leases, without their ids (an id is what releases a lease)",
        responses: { "200": json(s.activeLeasesSchema, "Active leases") },
    },
    {
        method: "get",
        path: "/v1/timeline",
        scope: "discover",
        tags: ["pools"],
        operationId: "timeline",
        summary: "Healthy and leased members per pool over the last hour, sampled by the service",
        responses: { "200": json(s.timelineSchema, "Samples, oldest first") },
    },
    {
        method: "get",
        path: "/v1/providers/health",
        scope: "discover",
        tags: ["system"],
        operationId: "providersHealth",
        summary: "Provider checks with per-target verdicts",
        responses: { "200": json(s.providersHealthResponse, "Verdicts") },
    },
    {
        method: "get",
        path: "/v1/heal",
        scope: "discover",
        tags: ["system"],
        operationId: "healStatus",
        summary: "Reconcile loop: last round's decisions, providers blocking repairs, members in backoff",
        responses: { "200": json(s.healResponse, "Status") },
    },
    {
        method: "get",
        path: "/v1/echo",
        tags: ["system"],
        operationId: "echo",
        summary: "The caller's IP (the health probes' default check URL); no token",
        responses: { "200": json(s.echoResponse, "The caller's address") },
    },
    {
        method: "get",
        path: "/v1/openapi.json",
        tags: ["system"],
        operationId: "openapi",
        summary: "This document; no token",
        responses: { "200": json(z.record(z.string(), z.unknown()), "OpenAPI 3.1 document") },
    },
    {
        method: "get",
        path: "/docs",
        tags: ["system"],
        operationId: "docs",
        summary: "Interactive API docs (swagger-ui, served locally); no token",
        responses: { "200": { description: "HTML page", content: { "text/html": { schema: z.string() } } } },
    },
    {
        method: "get",
        path: "/docs/{asset}",
        tags: ["system"],
        operationId: "docsAsset",
        summary: "Static files of the API docs page; no token",
        request: { params: z.object({ asset: z.string().describe("A swagger-ui-dist file name") }) },
        responses: {
            "200": {
                description: "The file (CSS or JavaScript)",
                content: { "text/css": { schema: z.string() }, "application/javascript": { schema: z.string() } },
            },
            "404": error("`not_found`: not one of the served files"),
        },
    },
    {
        method: "get",
        path: "/healthz",
        tags: ["system"],
        operationId: "healthz",
        summary: "Liveness (answered while stopping too)",
        alwaysOn: true,
        responses: { "200": json(s.okResponse, "Alive") },
    },
    {
        method: "get",
        path: "/readyz",
        tags: ["system"],
        operationId: "readyz",
        summary: "Readiness: stack view loaded and recovery done",
        responses: { "200": json(s.okResponse, "Ready") },
    },
    {
        method: "get",
        path: "/metrics",
        tags: ["system"],
        operationId: "metrics",
        summary: "Prometheus metrics (answered while stopping too)",
        alwaysOn: true,
        responses: {
            "200": { description: "Prometheus text format", content: { "text/plain": { schema: z.string() } } },
        },
    },
];

/** The operations' responses with the errors each route can answer, by status. */
export function responsesOf(op: Op): Record<string, ResponseConfig> {
    const auth: Record<string, ResponseConfig> =
        op.scope === "any" ? { "401": authErrors["401"] } : op.scope ? authErrors : {};
    return { ...(op.alwaysOn ? { "400": anyRoute["400"] } : anyRoute), ...auth, ...op.responses };
}

let cached: { version: string; doc: object } | undefined;

export function openapiDocument(version: string): object {
    if (cached?.version === version) return cached.doc;
    const registry = new OpenAPIRegistry();
    for (const scope of ALL_SCOPES)
        registry.registerComponent("securitySchemes", schemeOf(scope), {
            type: "http",
            scheme: "bearer",
            description: `Bearer token with the \`${scope}\` scope${scope === "admin" ? " (implies every scope)" : " (or admin)"}`,
        });
    for (const op of OPERATIONS) {
        const { scope, alwaysOn: _alwaysOn, ...route } = op;
        registry.registerPath({ ...route, ...(scope ? secured(scope) : { security: [] }), responses: responsesOf(op) });
    }
    const doc = new OpenApiGeneratorV31(registry.definitions).generateDocument({
        openapi: "3.1.0",
        info: {
            title: "egress",
            version,
            description:
                "Scale proxy pools, discover live proxies, lease them with cooldowns. Every error answer is `{error:{code,message,details?}}`. Tokens go in `Authorization: Bearer …`, never in the URL.",
        },
        tags: [
            { name: "pools" },
            { name: "operations" },
            { name: "discovery" },
            { name: "leases" },
            { name: "system" },
        ],
    });
    cached = { version, doc };
    return doc;
}
