/**
 * The API contract on a real service (local proxies, real engine; test/helpers/openapi-service.ts): its
 * real answers — successes and the typical errors — validate against /v1/openapi.json: status documented,
 * content type documented, body matching its schema with no undeclared field; and every documented
 * operation was answered with a 2xx. The document itself and its coverage of the routes:
 * openapi-document.test.ts.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as zlib from "node:zlib";
import { OPERATIONS } from "../../src/service/api/openapi";
import { TestService, TOKENS } from "../helpers/service";
import { proxyBasicAuth, startTargetServer, viaProxy } from "../helpers/net";
import { withOpenApiService } from "../helpers/openapi-service";
import { settled, waitFor } from "../helpers/harness";

let svc: TestService;
const { call, seen } = withOpenApiService((made) => ({ svc } = made));
/** An origin on loopback for gateway requests (the gateway does not relay to the service's own API). */
let origin: Awaited<ReturnType<typeof startTargetServer>>;
before(async () => (origin = await startTargetServer()));
after(() => origin?.close());

test("pools: list, scale (202), and its errors", { timeout: 120_000 }, async () => {
    const pools = await call("GET", "/v1/pools", { token: TOKENS.discover });
    assert.equal(pools.status, 200);
    assert.equal(pools.body.pools[0].name, "web");
    assert.equal((await call("GET", "/v1/pools", { token: null })).status, 401);
    assert.equal((await call("GET", "/v1/pools", { token: "not-a-token-at-all" })).status, 401);
    assert.equal((await call("GET", "/v1/pools", { token: TOKENS.lease })).status, 403);
    assert.equal((await call("GET", "/v1/pools?access_token=abc")).status, 400);
    assert.equal((await call("PUT", "/v1/pools/web/replicas", { body: { replicas: "three" } })).status, 400);
    assert.equal((await call("PUT", "/v1/pools/web/replicas", { body: { replicas: 99 } })).status, 400);
    assert.equal((await call("PUT", "/v1/pools/nope/replicas", { body: { replicas: 1 } })).status, 404);
    assert.equal(
        (await call("PUT", "/v1/pools/web/replicas", { token: TOKENS.discover, body: { replicas: 1 } })).status,
        403,
    );
    assert.equal(
        (await call("PUT", "/v1/pools/web/replicas", { raw: `{"replicas":${" ".repeat(20_000)}1}` })).status,
        413,
    );
    assert.equal(
        (
            await call("PUT", "/v1/pools/web/replicas", {
                raw: '{"replicas":',
                headers: { "content-type": "application/json" },
            })
        ).status,
        400,
    );
    assert.equal(
        (
            await call("PUT", "/v1/pools/web/replicas", {
                raw: zlib.gzipSync("{}"),
                headers: { "content-encoding": "compress" },
            })
        ).status,
        415,
    );
    const scaled = await call("PUT", "/v1/pools/web/replicas", { token: TOKENS.scale, body: { replicas: 3 } });
    assert.equal(scaled.status, 202);
    assert.equal(scaled.headers.get("location"), `/v1/operations/${scaled.body.operation.id}`);
    await settled(svc, scaled.body.operation.id);
});

test("operations: list, one, its event stream, 404s", { timeout: 60_000 }, async () => {
    const list = await call("GET", "/v1/operations", { token: TOKENS.scale });
    assert.ok(list.body.operations.length >= 2);
    const id = list.body.operations.at(-1).id;
    assert.equal((await call("GET", `/v1/operations/${id}`, { token: TOKENS.scale })).status, 200);
    assert.equal((await call("GET", "/v1/operations/op_nope", { token: TOKENS.scale })).status, 404);
    assert.equal((await call("GET", "/v1/operations/op_nope/events", { token: TOKENS.scale })).status, 404);
    assert.equal((await call("GET", `/v1/operations/${id}/events`, { token: TOKENS.discover })).status, 403);
    const stream = await call("GET", `/v1/operations/${id}/events`, { token: TOKENS.scale });
    assert.equal(stream.status, 200);
    assert.ok(stream.body.length >= 2, "events replayed");
    assert.equal(stream.body.at(-1).type, "status");
    assert.equal(
        (await call("GET", `/v1/operations/${id}/events`, { headers: { "last-event-id": "x1" } })).status,
        400,
    );
});

test(
    "discovery and leases: success and every typical error, on the fast path and through Express",
    { timeout: 60_000 },
    async () => {
        assert.equal((await call("GET", "/v1/proxies?state=healthy", { token: TOKENS.discover })).status, 200);
        assert.equal((await call("GET", "/v1/proxies?state=sleepy")).status, 400);
        assert.equal((await call("GET", "/v1/proxies?colour=red")).status, 400);
        await waitFor(
            "3 healthy",
            async () => (await svc.call("GET", "/v1/proxies?state=healthy")).body.proxies.length === 3,
            20_000,
        );
        const held: string[] = [];
        for (let i = 0; i < 3; i++) {
            // Every other one as text/plain: Express answers it instead of the fast path.
            const r = await call("POST", "/v1/leases", {
                token: TOKENS.lease,
                body: { pool: "web", ttlSeconds: 60 },
                headers: i % 2 ? { "content-type": "text/plain" } : {},
            });
            assert.equal(r.status, 201, r.text);
            held.push(r.body.lease.id);
        }
        const none = await call("POST", "/v1/leases", { token: TOKENS.lease, body: { pool: "web" } });
        assert.equal(none.status, 503);
        assert.ok(Number(none.headers.get("retry-after")) >= 1);
        assert.equal((await call("POST", "/v1/leases", { body: { pool: "nope" } })).status, 404);
        assert.equal((await call("POST", "/v1/leases", { body: { ttlSeconds: 0 } })).status, 400);
        assert.equal((await call("POST", "/v1/leases", { raw: "[1," })).status, 400);
        assert.equal((await call("POST", "/v1/leases", { token: TOKENS.discover, body: {} })).status, 403);
        assert.equal((await call("POST", "/v1/leases", { token: null, body: {} })).status, 401);
        assert.equal((await call("POST", "/v1/leases", { raw: `{"pool":"${"w".repeat(17_000)}"}` })).status, 413);
        assert.equal((await call("POST", `/v1/leases/${held[0]}/release`, { body: { outcome: "fine" } })).status, 400);
        assert.equal(
            (await call("POST", `/v1/leases/${held[0]}/release`, { token: TOKENS.lease, body: { outcome: "ok" } }))
                .status,
            200,
        );
        assert.equal(
            (
                await call("POST", `/v1/leases/${held[1]}/release`, {
                    body: { outcome: "blocked" },
                    headers: { "content-type": "text/plain" },
                })
            ).status,
            200,
        );
        assert.equal((await call("POST", `/v1/leases/${held[0]}/release`, { body: { outcome: "ok" } })).status, 404);
        assert.equal((await call("POST", `/v1/leases/${held[2]}/release`, { body: { outcome: "ok" } })).status, 200);
        await new Promise((r) => setTimeout(r, 1100)); // cooldowns
        const short = await call("POST", "/v1/leases", { body: { ttlSeconds: 1 } });
        assert.equal(short.status, 201, short.text);
        await new Promise((r) => setTimeout(r, 1300));
        const late = await call("POST", `/v1/leases/${short.body.lease.id}/release`, { body: { outcome: "ok" } });
        assert.equal(late.status, 410);
        assert.equal(late.body.error.code, "lease_expired");
    },
);

/** A GET through the rotating gateway (the origin is the test's, on loopback). */
async function viaGateway(user: string, token: string): Promise<number> {
    const url = `http://127.0.0.1:${origin.port}/echo`;
    return (await viaProxy(svc.gatewayPort!, url, proxyBasicAuth(user, token)["proxy-authorization"])).status;
}

test("blocks: a block reported for a gateway request (200), and its errors", { timeout: 60_000 }, async () => {
    // Pool cooldown is 1 s and the lease tests above just released members: retry until one is free.
    await waitFor(
        "a request through the gateway",
        async () => (await viaGateway("web_session_k1", TOKENS.lease)) === 200,
        20_000,
        200,
    );
    const r = await call("POST", "/v1/blocks", {
        token: TOKENS.lease,
        body: { pool: "web", target: "127.0.0.1", session: "k1" },
    });
    assert.equal(r.status, 200);
    assert.match(r.body.blocked.proxy, /^web-\d$/);
    assert.equal(
        (await call("POST", "/v1/blocks", { token: TOKENS.lease, body: { pool: "web", target: "127.0.0.1" } })).status,
        404,
        "no session: another key",
    );
    assert.equal(
        (await call("POST", "/v1/blocks", { body: { pool: "web", target: "127.0.0.1", session: "k1" } })).status,
        404,
        "another token",
    );
    assert.equal((await call("POST", "/v1/blocks", { body: { pool: "web" } })).status, 400);
    assert.equal(
        (await call("POST", "/v1/blocks", { token: TOKENS.discover, body: { pool: "web", target: "x" } })).status,
        403,
    );
});

test("system routes, the docs page and its assets (no token), and unknown docs files", async () => {
    for (const [path, token] of [
        ["/v1/whoami", TOKENS.lease],
        ["/v1/leases", TOKENS.discover],
        ["/v1/timeline", TOKENS.discover],
        ["/v1/providers/health", TOKENS.discover],
        ["/v1/heal", TOKENS.discover],
        ["/v1/cluster", TOKENS.discover],
        ["/v1/echo", null],
        ["/v1/openapi.json", null],
        ["/healthz", null],
        ["/readyz", null],
        ["/metrics", null],
    ] as const)
        assert.equal((await call("GET", path, { token })).status, 200, path);
    assert.equal((await call("GET", "/v1/heal", { token: null })).status, 401);
    const page = await call("GET", "/docs", { token: null });
    assert.equal(page.status, 200);
    const assets = [...page.text.matchAll(/(?:href|src)="(\/docs\/[^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual(assets.sort(), ["/docs/init.js", "/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css"]);
    for (const a of assets) {
        const r = await call("GET", a, { token: null });
        assert.equal(r.status, 200, a);
        assert.ok(
            r.text.length > (a.endsWith("init.js") ? 20 : 10_000),
            `${a} is the real file (${r.text.length} bytes)`,
        );
    }
    assert.match((await call("GET", "/docs/init.js", { token: null })).text, /\/v1\/openapi\.json/);
    assert.equal((await call("GET", "/docs/..%2Fpackage.json", { token: null })).status, 404);
    assert.equal((await call("GET", "/docs/index.html", { token: null })).status, 404);
});

test("bad input: every operation with a scope answers 401 without a token; /docs, its assets and the document need none", async () => {
    const concrete = (p: string) =>
        p.replace("{pool}", "web").replace("{id}", "x").replace("{asset}", "swagger-ui.css");
    for (const op of OPERATIONS) {
        const r = await call(op.method.toUpperCase(), concrete(op.path), {
            token: null,
            ...(op.method === "get" ? {} : { body: {} }),
        });
        if (op.scope) {
            assert.equal(r.status, 401, `${op.method} ${op.path}`);
            assert.equal(r.body.error.code, "unauthenticated");
        } else assert.equal(r.status, 200, `${op.method} ${op.path} is public`);
    }
});

test("every documented operation was answered for real with a 2xx and validated", () => {
    const missing = OPERATIONS.filter((o) => ![...(seen.get(o.operationId) ?? [])].some((s) => s < 300)).map(
        (o) => o.operationId,
    );
    assert.deepEqual(missing, []);
    const statuses = [...seen.values()].reduce((n, s) => n + s.size, 0);
    console.log(`validated real answers: ${seen.size} operations, ${statuses} (operation, status) pairs`);
});

test(
    "while the service stops, answers are the documented 503 not_ready (liveness and metrics stay 200)",
    { timeout: 120_000 },
    async () => {
        // A running operation keeps the stopping window open: close waits for it.
        const op = await call("PUT", "/v1/pools/web/replicas", { body: { replicas: 2 } });
        assert.equal(op.status, 202);
        await waitFor(
            "the operation runs",
            async () =>
                (await svc.call("GET", `/v1/operations/${op.body.operation.id}`)).body.operation.status === "running",
            30_000,
            20,
        );
        const stopping = svc.stop();
        try {
            await waitFor(
                "stopping",
                async () =>
                    (await fetch(`${svc.url}/v1/pools`, { headers: { authorization: `Bearer ${TOKENS.admin}` } }))
                        .status === 503,
                10_000,
                20,
            );
            for (const [method, path, body] of [
                ["GET", "/v1/pools"],
                ["POST", "/v1/leases", {}],
                ["GET", "/v1/proxies"],
                ["GET", "/docs"],
                ["GET", "/v1/openapi.json"],
            ] as const) {
                const r = await call(method, path, body ? { body } : {});
                assert.equal(r.status, 503, `${method} ${path}`);
                assert.equal(r.body.error.code, "not_ready");
                assert.ok(Number(r.headers.get("retry-after")) >= 1);
            }
            assert.equal((await call("GET", "/healthz", { token: null })).status, 200);
            assert.equal((await call("GET", "/metrics", { token: null })).status, 200);
        } finally {
            await stopping;
        }
    },
);
