import { z } from "zod";
import { errorSchema, leaseBody, proxySchema, releaseBody, scaleBody } from "./schemas";

const json = (schema: z.ZodType) => ({ "application/json": { schema: z.toJSONSchema(schema, { target: "draft-2020-12", unrepresentable: "any" }) } });
const err = (description: string) => ({ description, content: json(errorSchema) });
const auth = (scope: string) => ({ security: [{ bearer: [scope] }], "x-egress-scope": scope });
const common = { "400": err("Invalid request: the body says which field and rule"), "401": err("Missing or invalid token"), "403": err("Token lacks the scope") };

/** OpenAPI 3.1 for /v1, generated from the same zod schemas the handlers validate with. */
export function openapiDocument(version: string) {
    return {
        openapi: "3.1.0",
        info: { title: "egress", version, description: "Scale proxy pools, discover live proxies, lease them with cooldowns." },
        components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
        paths: {
            "/v1/pools": { get: { summary: "Pools with desired, actual and healthy counts", ...auth("discover"), responses: { "200": { description: "Pools" }, ...common } } },
            "/v1/pools/{pool}/replicas": {
                put: {
                    summary: "Set a pool's desired replicas; applied by one engine operation (latest request wins)",
                    ...auth("scale"),
                    parameters: [{ name: "pool", in: "path", required: true, schema: { type: "string" } }],
                    requestBody: { required: true, content: json(scaleBody) },
                    responses: { "202": { description: "Accepted; body is the operation that applies it" }, "404": err("Unknown pool"), ...common },
                },
            },
            "/v1/operations/{id}": { get: { summary: "An engine operation", ...auth("scale"), responses: { "200": { description: "Operation" }, "404": err("Unknown operation"), ...common } } },
            "/v1/operations/{id}/events": { get: { summary: "Server-Sent Events of the operation's engine progress", ...auth("scale"), responses: { "200": { description: "text/event-stream" }, "404": err("Unknown operation") } } },
            "/v1/proxies": {
                get: {
                    summary: "Live proxies",
                    ...auth("discover"),
                    parameters: [
                        { name: "pool", in: "query", schema: { type: "string" } },
                        { name: "state", in: "query", schema: { type: "string", enum: ["healthy", "unhealthy", "unknown"] } },
                        { name: "lifecycle", in: "query", schema: { type: "string", enum: ["provisioning", "ready", "draining", "failed"] } },
                    ],
                    responses: { "200": { description: "Proxies", content: json(z.object({ proxies: z.array(proxySchema) })) }, ...common },
                },
            },
            "/v1/leases": {
                post: {
                    summary: "Lease one healthy, unleased proxy out of cooldown, least recently used first",
                    ...auth("lease"),
                    requestBody: { content: json(leaseBody) },
                    responses: { "201": { description: "The lease" }, "503": err("None available; Retry-After says when to try again"), ...common },
                },
            },
            "/v1/leases/{id}/release": {
                post: {
                    summary: "Release a lease with its outcome",
                    ...auth("lease"),
                    requestBody: { required: true, content: json(releaseBody) },
                    responses: { "200": { description: "Released" }, "404": err("Unknown lease"), "410": err("Lease already ended: `lease_expired` (its TTL ran out) or `proxy_removed` (its proxy was scaled away, replaced or gone; details.reason says which: scaled-down, replaced, gone, removed)"), ...common },
                },
            },
            "/v1/providers/health": { get: { summary: "Provider checks with per-target verdicts", ...auth("discover"), responses: { "200": { description: "Verdicts" }, ...common } } },
            "/v1/heal": { get: { summary: "Reconcile loop: last round's decisions, providers blocking repairs, members in backoff", ...auth("discover"), responses: { "200": { description: "Status" }, ...common } } },
            "/v1/echo": { get: { summary: "Returns the caller's IP (the health probes' default check URL); no auth", responses: { "200": { description: "{ip}" } } } },
            "/healthz": { get: { summary: "Liveness", responses: { "200": { description: "ok" } } } },
            "/readyz": { get: { summary: "Readiness: stack view loaded and recovery done", responses: { "200": { description: "ready" }, "503": err("not ready") } } },
            "/metrics": { get: { summary: "Prometheus metrics", responses: { "200": { description: "text/plain" } } } },
        },
    };
}
