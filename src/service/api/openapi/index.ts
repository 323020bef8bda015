import { OpenAPIRegistry, OpenApiGeneratorV31, type ResponseConfig } from "@asteasolutions/zod-to-openapi";
import { anyRoute, authErrors, type Op, schemeOf, secured, ALL_SCOPES } from "./helpers";
import { CONTROL_OPERATIONS } from "./control";
import { LEASES_OPERATIONS } from "./leases";
import { READS_OPERATIONS } from "./reads";
import { SYSTEM_OPERATIONS } from "./system";

/**
 * OpenAPI 3.1 for every route the service answers, generated from the zod schemas the handlers
 * validate and type their bodies with (../schemas), so the document cannot drift from the code.
 * test/service/openapi-document.test.ts fails when a served route is missing here, openapi.test.ts
 * when a real answer does not match its schema. The routes are listed by room (control, leases, reads, system).
 */

/** Every operation, in the order /docs shows them. */
export const OPERATIONS: Op[] = [
    ...CONTROL_OPERATIONS,
    ...LEASES_OPERATIONS,
    ...READS_OPERATIONS,
    ...SYSTEM_OPERATIONS,
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
