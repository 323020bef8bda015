/**
 * Every error code the service answers with, its HTTP status, and when it is used: one place, so a
 * code cannot get two statuses, the OpenAPI document lists exactly these (api/schemas.ts `errorSchema`),
 * and docs/api.md's table is checked against it (test/unit/error-catalogue.test.ts).
 *
 * `gateway` is the status the gateway answers instead, where it differs: a forward proxy asks for
 * credentials with 407 and `Proxy-Authenticate` (RFC 9110 §15.5.8), not with 401/403.
 */
export const ERRORS = {
    invalid_request: {
        status: 400,
        when: "a body, query, path or header failed validation; details lists each field and rule",
    },
    malformed_json: { status: 400, when: "the request body is not valid JSON" },
    malformed_request: {
        status: 400,
        when: "Node's HTTP parser refused the request (e.g. Content-Length with Transfer-Encoding)",
    },
    invalid_method: { status: 400, when: "not an HTTP method the server knows" },
    bad_request: { status: 400, when: "any other client mistake, or (gateway) the client went away before its answer" },
    token_in_url: { status: 400, when: "credentials sent as a query parameter; they are refused unused" },
    not_scalable: { status: 400, when: "the pool's kind cannot be scaled (a static list)" },
    bad_username: {
        status: 400,
        when: "(gateway) the proxy username does not follow the grammar of the options table (src/service/gateway/username-options.ts; docs/api.md, Gateway username options): the message names the broken rule and quotes the grammar",
    },
    unauthenticated: { status: 401, gateway: 407, when: "no token, or one that matches none" },
    forbidden: { status: 403, gateway: 407, when: "the token lacks the scope the route needs" },
    forbidden_target: { status: 403, when: "(gateway) the target is the lease store or the service itself" },
    not_found: { status: 404, when: "no such route or asset" },
    unknown_pool: { status: 404, when: "no pool by that name" },
    unknown_label: {
        status: 400,
        when: "a lease or gateway request selecting a label, or a label value, no member of its pool has had since the service started; the message names the known ones",
    },
    unknown_zone: {
        status: 400,
        when: "a lease or gateway request for a zone no member of its pool has had since the service started; the message names the zones",
    },
    unknown_lease: { status: 404, when: "no lease by that id" },
    unknown_operation: { status: 404, when: "no operation by that id" },
    not_served: {
        status: 404,
        when: "a block report about nothing the gateway served this token in the last 10 minutes",
    },
    gateway_off: { status: 404, when: "a block report while the gateway is off" },
    autoscaled: {
        status: 409,
        when: "a scale request for an autoscaled pool: change its `autoscale` bounds in the stack config instead",
    },
    request_timeout: { status: 408, when: "the request did not arrive in time" },
    lease_expired: { status: 410, when: "the lease ended by its TTL; its proxy went back to the pool" },
    proxy_removed: {
        status: 410,
        when: "the lease ended because its proxy left the pool (scale-down, failure, drain)",
    },
    body_too_large: { status: 413, when: "the body is over 16 KiB" },
    chunk_extensions_too_large: { status: 413, when: "chunk extensions larger than the server accepts" },
    unsupported_encoding: { status: 415, when: "a body encoding or charset the server does not read" },
    expectation_failed: { status: 417, when: "an Expect header other than 100-continue" },
    over_limit: { status: 429, when: "(gateway) the token has its gatewayConcurrency requests in flight" },
    target_busy: {
        status: 429,
        when: "the pool's per-site politeness (`targets`: maxConcurrency, minIntervalMs) holds the lease back for this target; Retry-After says when to try again",
    },
    headers_too_large: { status: 431, when: "request headers larger than the server accepts" },
    internal: { status: 500, when: "a bug: the service log has the stack" },
    member_unreachable: {
        status: 502,
        when: "(gateway) the leased member refused or broke the connection before answering; Proxy-Status names it",
    },
    session_gone: {
        status: 502,
        when: '(gateway) a `_strict` session\'s member is gone (removed, unhealthy or draining); `Proxy-Status: egress; error=destination_unavailable; details="session_gone"`',
    },
    none_available: { status: 503, when: "no proxy can be leased now; Retry-After says when to try again" },
    not_ready: { status: 503, when: "the service is starting, recovering the stack, or shutting down; Retry-After" },
    store_unavailable: { status: 503, when: "the lease store (--store redis://…) is unreachable; Retry-After: 2" },
    dashboard_not_built: { status: 503, when: "the dashboard bundle is missing: run `npm run build`" },
    member_timeout: { status: 504, when: "(gateway) the leased member did not accept the connection in time" },
} as const satisfies Record<string, { status: number; gateway?: number; when: string }>;

export type ErrorCode = keyof typeof ERRORS;
export const ERROR_CODES = Object.keys(ERRORS) as [ErrorCode, ...ErrorCode[]];

/** The status of `code` as the API answers it. */
export function statusOf(code: ErrorCode): number {
    return ERRORS[code].status;
}

/** The status of `code` as the gateway (a forward proxy) answers it. */
export function gatewayStatusOf(code: ErrorCode): number {
    const e: { status: number; gateway?: number } = ERRORS[code];
    return e.gateway ?? e.status;
}
