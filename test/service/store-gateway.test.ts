/**
 * The Redis store behind the gateway and the Express lease routes (in process, startService with
 * `store`): gateway requests and `POST /v1/blocks` work through it; with Redis killed they answer 503
 * `store_unavailable` with Retry-After (the gateway with `X-Egress-Error`), and the Express route (a body
 * the fast path leaves to it) does too; a Redis that comes back empty (no persistence) gets the members
 * published again and the gateway serves by itself.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { proxyBasicAuth, rawHttp, requestViaProxy, startTargetServer } from "../helpers/net";
import { startRedis, TestRedis } from "../helpers/redis";
import { settledConverge, startTestService, TestService, TOKENS } from "../helpers/service";
import { waitFor } from "../helpers/harness";

let redis: TestRedis;
let svc: TestService;
let target: Awaited<ReturnType<typeof startTargetServer>>;
before(async () => {
    redis = await startRedis();
    target = await startTargetServer();
    svc = await startTestService(
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [{ name: "web", provider: "local", replicas: 2, maxReplicas: 2, cooldownSeconds: 0 }],
        },
        {
            probeIntervalMs: 300,
            targetCooldownSeconds: 0,
            gateway: { port: 0 },
            store: { kind: "redis", url: redis.url, tls: false, db: 0 },
        },
    );
    await settledConverge(svc);
    await waitFor(
        "2 healthy",
        async () => (await svc.call("GET", "/v1/proxies?state=healthy")).body.proxies.length === 2,
        30_000,
    );
});
after(async () => {
    await svc?.close();
    await target?.close();
    await redis?.cleanup();
});

const viaGateway = () =>
    requestViaProxy(svc.gatewayPort!, `http://127.0.0.1:${target.port}/through`, proxyBasicAuth("web", TOKENS.lease));
/** A lease request with a content type the fast path leaves to Express (which parses any type as JSON). */
const expressLease = () =>
    svc.call("POST", "/v1/leases", { token: TOKENS.lease, raw: "{}", headers: { "content-type": "text/plain" } });

test("the gateway, POST /v1/blocks and the Express lease route work through the Redis store", async () => {
    const l = await expressLease();
    assert.equal(l.status, 201, JSON.stringify(l.body));
    assert.equal(
        (
            await svc.call("POST", `/v1/leases/${l.body.lease.id}/release`, {
                token: TOKENS.lease,
                raw: '{"outcome":"ok"}',
                headers: { "content-type": "text/plain" },
            })
        ).status,
        200,
    );
    const r = await viaGateway();
    assert.equal(r.status, 200, r.body);
    assert.equal(r.body, "hello /through");
    const blocked = await svc.call("POST", "/v1/blocks", {
        token: TOKENS.lease,
        body: { pool: "web", target: "127.0.0.1" },
    });
    assert.equal(blocked.status, 200, JSON.stringify(blocked.body));
    assert.equal(blocked.body.blocked.proxy, r.headers["x-egress-proxy"]);
});

test("the gateway never relays to the lease store (by any name of this machine), to the service's API or to itself; other loopback targets still work", async () => {
    const auth = proxyBasicAuth("web", TOKENS.lease)["proxy-authorization"];
    const connect = (target: string) =>
        rawHttp(
            svc.gatewayPort!,
            `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: ${auth}\r\n\r\n`,
            1500,
        );
    for (const target of [
        `127.0.0.1:${redis.port}`,
        `localhost:${redis.port}`,
        `[::1]:${redis.port}`,
        `127.0.0.2:${redis.port}`,
        `0.0.0.0:${redis.port}`,
        `127.0.0.1:${svc.gatewayPort}`,
        // The service's own API: its unauthenticated routes (/metrics, /v1/echo) stay off the gateway.
        new URL(svc.url).host,
        `localhost:${new URL(svc.url).port}`,
    ]) {
        const r = await connect(target);
        assert.equal(r.status, 403, `CONNECT ${target}: ${r.body}`);
        assert.equal(r.headers["x-egress-error"], "forbidden_target", target);
        assert.match(JSON.parse(r.body).error.message, /the gateway does not relay there/);
        assert.ok(!r.body.includes(redis.password), "the refusal does not show the store's password");
    }
    const plain = await requestViaProxy(
        svc.gatewayPort!,
        `http://localhost:${redis.port}/`,
        proxyBasicAuth("web", TOKENS.lease),
    );
    assert.equal(plain.status, 403, plain.body);
    assert.equal(plain.headers["x-egress-error"], "forbidden_target");
    const metrics = await requestViaProxy(svc.gatewayPort!, `${svc.url}/metrics`, proxyBasicAuth("web", TOKENS.lease));
    assert.equal(metrics.status, 403, "the API's open /metrics is not a crawler's through the gateway");
    assert.match(JSON.parse(metrics.body).error.message, /is this service's API/);
    // Not a blanket loopback ban: the test's own origin on loopback is reached, by tunnel and plainly.
    assert.equal((await connect(`127.0.0.1:${target.port}`)).status, 200);
    // (The tunnel's member is released as it closes; the other one is blocked for 127.0.0.1 by the test before.)
    await waitFor(
        "a plain request through the gateway",
        async () => (await viaGateway()).body === "hello /through",
        10_000,
        200,
    );
    // No lease is left behind by a refusal.
    await waitFor(
        "no live leases",
        async () => (await svc.call("GET", "/v1/leases", { token: TOKENS.admin })).body.leases.length === 0,
        5_000,
        100,
    );
});

test("Redis killed: the gateway, blocks and the Express lease route answer 503 store_unavailable; Redis back empty: served again", async () => {
    await redis.kill();
    const g = await viaGateway();
    assert.equal(g.status, 503, g.body);
    assert.equal(g.headers["x-egress-error"], "store_unavailable");
    assert.equal(g.headers["retry-after"], "2");
    const b = await svc.call("POST", "/v1/blocks", { token: TOKENS.lease, body: { pool: "web", target: "127.0.0.1" } });
    assert.equal(b.status, 503);
    assert.equal(b.body.error.code, "store_unavailable");
    const plain = await expressLease();
    assert.equal(plain.status, 503, JSON.stringify(plain.body));
    assert.equal(plain.headers.get("retry-after"), "2");
    assert.equal(plain.body.error.code, "store_unavailable");
    assert.ok(!JSON.stringify([g.body, b.body, plain.body]).includes(redis.password), "no answer shows the password");

    await redis.start();
    // Nothing persisted: the service publishes its members again on reconnect.
    const back = await waitFor(
        "the gateway serving again",
        async () => {
            const r = await viaGateway();
            return r.status === 200 ? r : undefined;
        },
        20_000,
        200,
    );
    assert.equal(back.body, "hello /through");
});
