import type { ResponseConfig, RouteConfig } from "@asteasolutions/zod-to-openapi";
import { z } from "zod";
import type { Scope } from "../../http/auth";
import * as s from "../schemas";

/** The pieces every route's description is made of: response builders, the errors any route can answer, security per scope. */

export const json = (schema: z.ZodType, description: string): ResponseConfig => ({
    description,
    content: { "application/json": { schema } },
});
export const retryAfter = z.object({ "Retry-After": z.string().describe("Seconds to wait before trying again") });
export const error = (description: string, headers?: z.ZodObject): ResponseConfig => ({
    ...json(s.errorSchema, description),
    ...(headers ? { headers } : {}),
});

/** Answers any route can give: credentials in the query, a malformed body (express.json reads every request), stopping. */
export const anyRoute = {
    "400": error(
        "Bad request: `token_in_url` (a credential-like query parameter; never use it), `malformed_json`, `invalid_request` (details list each field and rule)",
    ),
    "503": error("`not_ready`: the service is stopping (or not ready yet); try again after Retry-After", retryAfter),
};
export const withBody = {
    "413": error("`body_too_large`: bodies are limited to 16 KiB"),
    "415": error("`unsupported_encoding`: only identity/gzip/deflate/br UTF-8 JSON bodies are read"),
};
export const authErrors = {
    "401": error("`unauthenticated`: no or an unknown bearer token", z.object({ "WWW-Authenticate": z.string() })),
    "403": error("`forbidden`: the token lacks this route's scope (admin implies every scope)"),
};

/** Security scheme per scope, so each operation names exactly the scope it needs. */
export const schemeOf = (scope: Scope) => `${scope}Token`;
export const ALL_SCOPES = ["discover", "lease", "scale", "admin"] as const;
/** `any`: a valid token of any scope (GET /v1/whoami). */
export type OpScope = Scope | "any";
export const secured = (scope: OpScope) => ({
    security:
        scope === "any"
            ? ALL_SCOPES.map((sc) => ({ [schemeOf(sc)]: [] }))
            : scope === "admin"
              ? [{ adminToken: [] }]
              : [{ [schemeOf(scope)]: [] }, { adminToken: [] }],
    "x-egress-scope": scope,
});

export interface Op {
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

export const poolParams = z.object({ pool: z.string().describe("Pool name from egress:pools") });
export const idParams = (what: string) => z.object({ id: z.string().describe(what) });
