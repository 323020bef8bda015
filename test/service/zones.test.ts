/**
 * Leases by zone, through the real service and engine: four proxy-chain proxies on loopback listed as a
 * `static` pool in two zones (rack-1, rack-2). A lease or gateway request naming a zone only ever gets
 * that zone's members; a zone nobody has is a 400 naming the zones; a known zone with nothing free is a
 * 503 while the other zone still leases; a sticky session moves to the asked zone; /v1/proxies filters.
 * The same pick rules are then checked on the Redis lease store (a real redis-server), which runs them
 * in Lua.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Server } from "proxy-chain";
import { startTargetServer, viaProxy } from "../helpers/net";
import { settledConverge, startTestService, TestService, TOKENS, waitHealthy } from "../helpers/service";
import { publishedRedisStore } from "../helpers/redis-lease-store";
import type { RedisLeaseStore } from "../../src/service/store";

const ZONE_OF = ["rack-1", "rack-1", "rack-2", "rack-2"];
const proxies: Server[] = [];
let target: Awaited<ReturnType<typeof startTargetServer>>;
let svc: TestService;

const lease = (body: object) => svc.call("POST", "/v1/leases", { token: TOKENS.lease, body });
const release = (id: string) =>
    svc.call("POST", `/v1/leases/${id}/release`, { token: TOKENS.lease, body: { outcome: "ok" } });
const basic = (user: string) => `Basic ${Buffer.from(`${user}:${TOKENS.lease}`).toString("base64")}`;

before(async () => {
    target = await startTargetServer();
    for (let i = 0; i < 4; i++) {
        const s = new Server({ host: "127.0.0.1", port: 0, verbose: false });
        await s.listen();
        proxies.push(s);
    }
    svc = await startTestService(
        {
            "egress:providers": {
                racks: {
                    type: "static",
                    proxies: proxies.map((s, i) => ({ url: `http://127.0.0.1:${s.port}`, zone: ZONE_OF[i] })),
                },
            },
            "egress:pools": [{ name: "byo", provider: "racks", replicas: 4, cooldownSeconds: 0 }],
        },
        { targetCooldownSeconds: 0, gateway: { port: 0, blockRules: { statuses: [403, 429], headers: [] } } },
    );
    await settledConverge(svc);
    await waitHealthy(svc, 4);
});
after(async () => {
    await svc?.close();
    for (const s of proxies) await s.close(true).catch(() => undefined);
    await target?.close();
});

const zoneOf = (proxyId: string) => ZONE_OF[Number(proxyId.split("-").pop())];

describe("the service", () => {
    test("/v1/proxies?zone= lists that zone's members only", async () => {
        const r = await svc.call("GET", "/v1/proxies?zone=rack-2", { token: TOKENS.discover });
        assert.equal(r.status, 200);
        assert.deepEqual(r.body.proxies.map((p: { id: string }) => p.id).sort(), ["byo-2", "byo-3"]);
    });

    test("a lease with a zone only ever gets that zone's members, both of them in turn", async () => {
        const seen = new Set<string>();
        for (let i = 0; i < 20; i++) {
            const r = await lease({ pool: "byo", zone: "rack-1" });
            assert.equal(r.status, 201, JSON.stringify(r.body));
            assert.equal(r.body.lease.proxy.zone, "rack-1");
            assert.equal(zoneOf(r.body.lease.proxy.id), "rack-1");
            seen.add(r.body.lease.proxy.id);
            assert.equal((await release(r.body.lease.id)).status, 200);
        }
        assert.deepEqual([...seen].sort(), ["byo-0", "byo-1"], "least recently used rotates within the zone");
    });

    test("a zone with nothing free is a 503 with Retry-After while the other zone still leases", async () => {
        const held = [await lease({ pool: "byo", zone: "rack-2" }), await lease({ pool: "byo", zone: "rack-2" })];
        try {
            assert.deepEqual(
                held.map((h) => h.status),
                [201, 201],
            );
            const none = await lease({ pool: "byo", zone: "rack-2" });
            assert.equal(none.status, 503, JSON.stringify(none.body));
            assert.equal(none.body.error.code, "none_available");
            assert.match(none.body.error.message, /zone "rack-2"/);
            assert.ok(Number(none.headers.get("retry-after")) >= 1);
            const other = await lease({ pool: "byo", zone: "rack-1" });
            assert.equal(other.status, 201);
            await release(other.body.lease.id);
        } finally {
            for (const h of held) if (h.status === 201) await release(h.body.lease.id);
        }
    });

    test("an unknown zone is a 400 naming the zones; a bad one is a 400 naming the field", async () => {
        const r = await lease({ pool: "byo", zone: "rack-9" });
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.equal(r.body.error.code, "unknown_zone");
        assert.match(r.body.error.message, /zone "rack-9".*zones: rack-1, rack-2/);
        const bad = await lease({ pool: "byo", zone: "" });
        assert.equal(bad.status, 400);
        assert.equal(bad.body.error.code, "invalid_request");
        assert.match(JSON.stringify(bad.body.error.details), /zone/);
        // Nothing was leased by the refusals.
        const all = (await svc.call("GET", "/v1/proxies", { token: TOKENS.discover })).body.proxies;
        assert.equal(all.filter((p: { leased: boolean }) => p.leased).length, 0);
    });

    test("a sticky session moves to the asked zone, then keeps its member there", async () => {
        const first = await lease({ pool: "byo", session: "s1", zone: "rack-1" });
        assert.equal(first.status, 201);
        await release(first.body.lease.id);
        const moved = await lease({ pool: "byo", session: "s1", zone: "rack-2" });
        assert.equal(moved.status, 201);
        assert.equal(zoneOf(moved.body.lease.proxy.id), "rack-2");
        assert.equal(moved.body.lease.rebound, true);
        await release(moved.body.lease.id);
        const kept = await lease({ pool: "byo", session: "s1", zone: "rack-2" });
        assert.equal(kept.body.lease.proxy.id, moved.body.lease.proxy.id);
        assert.equal(kept.body.lease.rebound, false);
        await release(kept.body.lease.id);
    });

    test("the gateway's `_zone_` option: that zone's members serve; an unknown zone is a 400", async () => {
        const url = `http://127.0.0.1:${target.port}/z`;
        for (let i = 0; i < 6; i++) {
            const a = await viaProxy(svc.gatewayPort!, url, basic("byo_zone_rack-2"));
            assert.equal(a.status, 200, a.body);
            assert.equal(zoneOf(String(a.headers["x-egress-proxy"])), "rack-2");
        }
        const unknown = await viaProxy(svc.gatewayPort!, url, basic("byo_zone_rack-9"));
        assert.equal(unknown.status, 400);
        assert.equal(JSON.parse(unknown.body).error.code, "unknown_zone");
        assert.equal(unknown.headers["proxy-status"], 'egress; error=http_request_error; details="unknown_zone"');
        const bad = await viaProxy(svc.gatewayPort!, url, basic("byo_zone_rack/1"));
        assert.equal(bad.status, 400);
        assert.equal(JSON.parse(bad.body).error.code, "bad_username");
    });
});

describe("the Redis lease store (the pick in Lua)", () => {
    let redis: Awaited<ReturnType<typeof publishedRedisStore>>;
    let store: RedisLeaseStore;
    before(async () => {
        redis = await publishedRedisStore(
            "egress:zones:",
            ZONE_OF.map((zone, i) => ({ id: `byo-${i}`, pool: "byo", zone, eligible: true })),
            { byo: { cooldownSeconds: 0 } },
        );
        store = redis.store;
    });
    after(async () => {
        await redis?.close();
    });

    test("zone-scoped acquires, a full zone, a session moving zones", async () => {
        const got: { id: string; proxyId: string }[] = [];
        for (let i = 0; i < 2; i++) {
            const r = await store.acquire({ pool: "byo", zone: "rack-2" });
            assert.ok(r.ok, JSON.stringify(r));
            got.push(r.lease);
        }
        assert.deepEqual(got.map((l) => l.proxyId).sort(), ["byo-2", "byo-3"]);
        const full = await store.acquire({ pool: "byo", zone: "rack-2" });
        assert.equal(full.ok, false);
        assert.equal(!full.ok && full.reason, "none-available");
        const r1 = await store.acquire({ pool: "byo", zone: "rack-1", session: "s" });
        assert.ok(r1.ok);
        assert.equal(zoneOf(r1.lease.proxyId), "rack-1");
        assert.ok((await store.release(r1.lease.id, "ok")).ok);
        for (const l of got) assert.ok((await store.release(l.id, "ok")).ok);
        const moved = await store.acquire({ pool: "byo", zone: "rack-2", session: "s" });
        assert.ok(moved.ok, JSON.stringify(moved));
        assert.equal(zoneOf(moved.lease.proxyId), "rack-2");
        assert.equal(moved.rebound, true);
    });
});
