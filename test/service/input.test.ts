/**
 * Bad input never gets a 5xx: wrong types, bad counts, unknown pools, malformed or oversized JSON,
 * unknown fields, missing or wrong tokens and scopes each get a 4xx JSON body that says what is wrong.
 * Also: the public and operational routes (echo, healthz, readyz, metrics, OpenAPI, provider health).
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { startTestService, TestService, TOKENS } from "../helpers/service";
import { teardown } from "../helpers/harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 0, maxReplicas: 4 }],
};
let svc: TestService;
const cleanup = teardown();
before(async () => {
    svc = await startTestService(config, { converge: false });
    cleanup.own(svc);
});

const cases: {
    name: string;
    method: string;
    route: string;
    token?: string | null;
    body?: unknown;
    raw?: string;
    headers?: Record<string, string>;
    status: number;
    code: string;
    says: RegExp;
}[] = [
    {
        name: "missing token",
        method: "GET",
        route: "/v1/proxies",
        token: null,
        status: 401,
        code: "unauthenticated",
        says: /missing bearer token/,
    },
    {
        name: "wrong token",
        method: "GET",
        route: "/v1/proxies",
        token: "not-a-real-token-123456",
        status: 401,
        code: "unauthenticated",
        says: /invalid bearer token/,
    },
    {
        name: "malformed authorization header",
        method: "GET",
        route: "/v1/proxies",
        token: null,
        headers: { authorization: "Basic abc" },
        status: 401,
        code: "unauthenticated",
        says: /Bearer/,
    },
    {
        name: "missing scope",
        method: "PUT",
        route: "/v1/pools/web/replicas",
        token: TOKENS.discover,
        body: { replicas: 1 },
        status: 403,
        code: "forbidden",
        says: /lacks the `scale` scope/,
    },
    {
        name: "lease token cannot scale",
        method: "PUT",
        route: "/v1/pools/web/replicas",
        token: TOKENS.lease,
        body: { replicas: 1 },
        status: 403,
        code: "forbidden",
        says: /scale/,
    },
    {
        name: "replicas as string",
        method: "PUT",
        route: "/v1/pools/web/replicas",
        body: { replicas: "3" },
        status: 400,
        code: "invalid_request",
        says: /replicas: .*number/,
    },
    {
        name: "negative replicas",
        method: "PUT",
        route: "/v1/pools/web/replicas",
        body: { replicas: -1 },
        status: 400,
        code: "invalid_request",
        says: /replicas: must be 0 or more/,
    },
    {
        name: "fractional replicas",
        method: "PUT",
        route: "/v1/pools/web/replicas",
        body: { replicas: 1.5 },
        status: 400,
        code: "invalid_request",
        says: /replicas: must be a whole number/,
    },
    {
        name: "huge replicas",
        method: "PUT",
        route: "/v1/pools/web/replicas",
        body: { replicas: 1e9 },
        status: 400,
        code: "invalid_request",
        says: /must not exceed maxReplicas \(4\)/,
    },
    {
        name: "missing replicas",
        method: "PUT",
        route: "/v1/pools/web/replicas",
        body: {},
        status: 400,
        code: "invalid_request",
        says: /replicas/,
    },
    {
        name: "unknown field",
        method: "PUT",
        route: "/v1/pools/web/replicas",
        body: { replicas: 1, force: true },
        status: 400,
        code: "invalid_request",
        says: /unknown field\(s\) force/,
    },
    {
        name: "body is an array",
        method: "PUT",
        route: "/v1/pools/web/replicas",
        body: [1],
        status: 400,
        code: "invalid_request",
        says: /expected object/,
    },
    {
        name: "unknown pool",
        method: "PUT",
        route: "/v1/pools/nope/replicas",
        body: { replicas: 1 },
        status: 404,
        code: "unknown_pool",
        says: /no pool named "nope" \(known: web\)/,
    },
    {
        name: "malformed JSON",
        method: "PUT",
        route: "/v1/pools/web/replicas",
        raw: '{"replicas": ',
        status: 400,
        code: "malformed_json",
        says: /not valid JSON/,
    },
    {
        name: "oversized body",
        method: "POST",
        route: "/v1/leases",
        raw: JSON.stringify({ target: "x".repeat(40_000) }),
        status: 413,
        code: "body_too_large",
        says: /exceeds \d+ bytes/,
    },
    {
        name: "lease: bad ttl",
        method: "POST",
        route: "/v1/leases",
        body: { ttlSeconds: 0 },
        status: 400,
        code: "invalid_request",
        says: /ttlSeconds/,
    },
    {
        name: "lease: ttl too long",
        method: "POST",
        route: "/v1/leases",
        body: { ttlSeconds: 86400 },
        status: 400,
        code: "invalid_request",
        says: /ttlSeconds/,
    },
    {
        name: "lease: unknown pool",
        method: "POST",
        route: "/v1/leases",
        body: { pool: "nope" },
        status: 404,
        code: "unknown_pool",
        says: /no pool named "nope"/,
    },
    {
        name: "lease: empty pool",
        method: "POST",
        route: "/v1/leases",
        body: { pool: "web" },
        status: 503,
        code: "none_available",
        says: /has no members; scale it up/,
    },
    {
        name: "release: bad outcome",
        method: "POST",
        route: "/v1/leases/abc/release",
        body: { outcome: "meh" },
        status: 400,
        code: "invalid_request",
        says: /outcome/,
    },
    {
        name: "release: unknown lease",
        method: "POST",
        route: "/v1/leases/abc/release",
        body: { outcome: "ok" },
        status: 404,
        code: "unknown_lease",
        says: /no lease "abc"/,
    },
    {
        name: "proxies: bad state filter",
        method: "GET",
        route: "/v1/proxies?state=great",
        status: 400,
        code: "invalid_request",
        says: /state/,
    },
    {
        name: "unknown operation",
        method: "GET",
        route: "/v1/operations/op_nope",
        status: 404,
        code: "unknown_operation",
        says: /op_nope/,
    },
    {
        name: "unknown route",
        method: "GET",
        route: "/v2/everything",
        status: 404,
        code: "not_found",
        says: /no route for GET \/v2\/everything/,
    },
];

for (const c of cases) {
    test(`${c.name} → ${c.status} ${c.code}`, async () => {
        const r = await svc.call(c.method, c.route, { token: c.token, body: c.body, raw: c.raw, headers: c.headers });
        assert.equal(r.status, c.status, JSON.stringify(r.body));
        assert.equal(r.headers.get("content-type")?.split(";")[0], "application/json");
        assert.equal(r.body.error.code, c.code);
        assert.match(r.body.error.message, c.says);
    });
}

test("bad scale input leaves the stack file and state untouched", async () => {
    const ops = await svc.call("GET", "/v1/operations");
    assert.deepEqual(ops.body.operations, [], "no operation was started by any bad request");
});

test("echo returns the caller's address without a token", async () => {
    const r = await svc.call("GET", "/v1/echo", { token: null });
    assert.deepEqual(r.body, { ip: "127.0.0.1" });
});

test("healthz, readyz, metrics, OpenAPI, provider health", async () => {
    assert.equal((await svc.call("GET", "/healthz", { token: null })).status, 200);
    assert.equal((await svc.call("GET", "/readyz", { token: null })).status, 200);
    const metrics = await svc.call("GET", "/metrics", { token: null });
    for (const m of [
        "egress_leases_total",
        "egress_lease_latency_seconds",
        "egress_proxies",
        "egress_probes_total",
        "egress_probe_latency_seconds",
        "egress_operations_total",
        "egress_operation_duration_seconds",
        "egress_provider_up",
    ])
        assert.ok(String(metrics.body).includes(m), `metric ${m}`);
    const doc = (await svc.call("GET", "/v1/openapi.json", { token: null })).body;
    assert.equal(doc.openapi, "3.1.0");
    const scale = doc.paths["/v1/pools/{pool}/replicas"].put.requestBody.content["application/json"].schema;
    assert.deepEqual(scale.required, ["replicas"]);
    assert.equal(scale.properties.replicas.type, "integer");
    assert.equal(scale.additionalProperties, false);
    const health = await svc.call("GET", "/v1/providers/health", { token: TOKENS.discover });
    const local = health.body.providers.find((p: any) => p.provider === "local");
    assert.equal(local.ok, true, JSON.stringify(local));
    assert.equal(local.targets[0].target, "localhost");
    assert.ok(local.targets[0].since && local.targets[0].checkedAt);
});
