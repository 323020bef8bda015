/**
 * The gateway's username options through the real service, gateway and engine, then the same rules on
 * the Redis lease store (a real redis-server, the pick in Lua): label selectors (`_country_de`, `where`
 * on POST /v1/leases), `_ttl_` (a session forgotten after its own idle lifetime), `_rotate` (a new
 * member now) and `_strict` (502 `session_gone` with Proxy-Status once the member is gone).
 * Two static pools of two proxy-chain proxies each, labelled country de and us.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Server } from "proxy-chain";
import { startTargetServer, viaProxy } from "../helpers/net";
import { settledConverge, startTestService, TestService, TOKENS, waitHealthy } from "../helpers/service";
import { leaseClock } from "../helpers/lease-clock";
import { publishedRedisStore } from "../helpers/redis-lease-store";
import type { RedisLeaseStore } from "../../src/service/store";
import { sleep, waitFor } from "../helpers/harness";

const proxies: Server[] = [];
let target: Awaited<ReturnType<typeof startTargetServer>>;
// The lease rules' clock: a test moves it past a cooldown or an idle TTL of whole seconds instead of sleeping.
const clock = leaseClock();
let svc: TestService;

const lease = (body: object) => svc.call("POST", "/v1/leases", { token: TOKENS.lease, body });
const release = (id: string) =>
    svc.call("POST", `/v1/leases/${id}/release`, { token: TOKENS.lease, body: { outcome: "ok" } });
const basic = (user: string) => `Basic ${Buffer.from(`${user}:${TOKENS.lease}`).toString("base64")}`;
const via = async (user: string) => {
    const a = await viaProxy(svc.gatewayPort!, `http://127.0.0.1:${target.port}/u`, basic(user));
    return { ...a, member: String(a.headers["x-egress-proxy"]) };
};

before(async () => {
    target = await startTargetServer();
    for (let i = 0; i < 4; i++) {
        const s = new Server({ host: "127.0.0.1", port: 0, verbose: false });
        await s.listen();
        proxies.push(s);
    }
    const list = (from: number) => proxies.slice(from, from + 2).map((s) => `http://127.0.0.1:${s.port}`);
    svc = await startTestService(
        {
            "egress:providers": {
                berlin: { type: "static", proxies: list(0) },
                ohio: { type: "static", proxies: list(2) },
            },
            "egress:pools": [
                { name: "de", provider: "berlin", replicas: 2, labels: { country: "de", tier: "dc" } },
                { name: "us", provider: "ohio", replicas: 2, labels: { country: "us", tier: "dc" } },
            ],
        },
        {
            targetCooldownSeconds: 0,
            leaseClock: clock.now,
            gateway: { port: 0, blockRules: { statuses: [403, 429], headers: [] } },
        },
    );
    await settledConverge(svc);
    await waitHealthy(svc, 4);
});
after(async () => {
    await svc?.close();
    for (const s of proxies) await s.close(true).catch(() => undefined);
    await target?.close();
});

describe("the gateway and POST /v1/leases", () => {
    test("a label selector on the gateway: any pool, only the members labelled so", async () => {
        for (let i = 0; i < 6; i++) {
            const a = await via("_country_us");
            assert.equal(a.status, 200, a.body);
            assert.match(a.member, /^us-/);
        }
        const both = await via("_tier_dc_country_de");
        assert.match(both.member, /^de-/);
        const unknownValue = await via("_country_fr");
        assert.equal(unknownValue.status, 400);
        assert.equal(JSON.parse(unknownValue.body).error.code, "unknown_label");
        assert.match(JSON.parse(unknownValue.body).error.message, /label country "fr" \(country values: de, us\)/);
        assert.equal(unknownValue.headers["proxy-status"], 'egress; error=http_request_error; details="unknown_label"');
        const unknownLabel = await via("de_colour_red");
        assert.equal(unknownLabel.status, 400);
        assert.match(JSON.parse(unknownLabel.body).error.message, /label "colour" \(labels: country, tier, zone\)/);
        const bad = await via("de_session_s_strict_rotate");
        assert.equal(bad.status, 400);
        assert.equal(JSON.parse(bad.body).error.code, "bad_username");
    });

    test("GET /v1/proxies shows each member's labels as selectors see them", async () => {
        const r = await svc.call("GET", "/v1/proxies", { token: TOKENS.discover });
        assert.equal(r.status, 200);
        const byPool = (pool: string) => r.body.proxies.filter((p: any) => p.pool === pool);
        for (const [pool, country] of [
            ["de", "de"],
            ["us", "us"],
        ]) {
            assert.equal(byPool(pool).length, 2);
            for (const p of byPool(pool))
                assert.deepEqual(p.labels, { country, tier: "dc", zone: p.zone }, JSON.stringify(p));
        }
    });

    test("the same selector as `where` on POST /v1/leases, beside `zone`", async () => {
        const r = await lease({ where: { country: "de" } });
        assert.equal(r.status, 201, JSON.stringify(r.body));
        assert.equal(r.body.lease.proxy.pool, "de");
        await release(r.body.lease.id);
        const fr = await lease({ where: { country: "fr" } });
        assert.equal(fr.status, 400);
        assert.equal(fr.body.error.code, "unknown_label");
        const badKey = await lease({ where: { Country: "de" } });
        assert.equal(badKey.status, 400);
        assert.equal(badKey.body.error.code, "invalid_request");
        const clash = await lease({ zone: "a", where: { zone: "b" } });
        assert.equal(clash.status, 400);
        assert.match(clash.body.error.message, /`zone` "a" and `where.zone` "b" disagree/);
    });

    test("_rotate moves the session to another member now; it sticks there after", async () => {
        const first = await via("de_session_r1");
        assert.equal((await via("de_session_r1")).member, first.member, "a session sticks");
        const rotated = await via("de_session_r1_rotate");
        assert.equal(rotated.status, 200, rotated.body);
        assert.notEqual(rotated.member, first.member);
        assert.equal((await via("de_session_r1")).member, rotated.member);
    });

    test("_ttl_: the session is forgotten after its own idle lifetime, not the pool's 1800 s", async () => {
        const a = await via("de_session_t1_ttl_1s");
        const b = await via("de_session_t2");
        assert.notEqual(a.member, b.member, "least recently used: the two sessions took the two members");
        clock.advance(1300);
        assert.equal((await via("de_session_t2")).member, b.member, "t2 (the pool's TTL) is remembered");
        // A plain request takes the least recently used member, t1's: were t1 remembered, it would get
        // that one back; forgotten, its next request is a new session on the other member.
        assert.equal((await via("de")).member, a.member);
        const again = await via("de_session_t1_ttl_1s");
        assert.equal(again.member, b.member, "t1 was forgotten after its 1 s");
    });

    test("_strict: its member gone, a 502 session_gone with Proxy-Status; without it the session moves", async () => {
        const first = await via("us_session_k1_strict");
        assert.equal(first.status, 200, first.body);
        const loose = await via("us_session_k2");
        const member = first.member;
        const index = 2 + Number(member.split("-").pop());
        await proxies[index].close(true);
        await waitFor("the member turns unhealthy", async () => {
            const r = await svc.call("GET", "/v1/proxies?pool=us", { token: TOKENS.discover });
            const p = r.body.proxies.find((x: { id: string }) => x.id === member);
            return p && p.health !== "healthy";
        });
        const gone = await via("us_session_k1_strict");
        assert.equal(gone.status, 502, gone.body);
        assert.equal(JSON.parse(gone.body).error.code, "session_gone");
        assert.match(JSON.parse(gone.body).error.message, new RegExp(`bound to member ${member}, which is gone`));
        assert.equal(gone.headers["proxy-status"], 'egress; error=destination_unavailable; details="session_gone"');
        const moved = await via("us_session_k1");
        assert.equal(moved.status, 200, moved.body);
        assert.notEqual(moved.member, member, "without _strict the session moves");
        assert.ok(loose.member);
    });
});

describe("the Redis lease store (the Lua pick)", () => {
    let redis: Awaited<ReturnType<typeof publishedRedisStore>>;
    let store: RedisLeaseStore;
    const members = [
        { id: "de-0", pool: "de", labels: { country: "de" }, eligible: true },
        { id: "de-1", pool: "de", labels: { country: "de" }, zone: "a", eligible: true },
        { id: "us-0", pool: "us", labels: { country: "us" }, zone: "a", eligible: true },
    ];
    const pools = { de: { cooldownSeconds: 0, sessionTtlSeconds: 60 }, us: { cooldownSeconds: 0 } };
    before(async () => {
        redis = await publishedRedisStore("egress:grammar:", members, pools);
        store = redis.store;
    });
    after(async () => {
        await redis?.close();
    });
    const take = async (req: Parameters<RedisLeaseStore["acquire"]>[0]) => {
        const r = await store.acquire({ shared: true, ...req });
        assert.ok(r.ok, JSON.stringify(r));
        assert.ok((await store.release(r.lease.id, "ok")).ok);
        return r.lease.proxyId;
    };

    test("a selector: labels, zone among them, several at once", async () => {
        for (let i = 0; i < 4; i++) assert.equal(await take({ where: { country: "us" } }), "us-0");
        for (let i = 0; i < 4; i++) assert.match(await take({ where: { country: "de" } }), /^de-/);
        assert.equal(await take({ where: { country: "de", zone: "a" } }), "de-1");
        assert.equal(await take({ zone: "a", where: { country: "de" } }), "de-1");
        const none = await store.acquire({ where: { country: "de", zone: "b" } });
        assert.equal(!none.ok && none.reason, "none-available");
        // A value that is a prefix of another's, or spans two labels, matches nothing.
        const prefix = await store.acquire({ where: { country: "d" } });
        assert.equal(!prefix.ok && prefix.reason, "none-available");
    });

    test("rotate and a session's own ttl", async () => {
        const m = await take({ pool: "de", session: "r" });
        assert.equal(await take({ pool: "de", session: "r" }), m);
        const n = await take({ pool: "de", session: "r", rotate: true });
        assert.notEqual(n, m);
        assert.equal(await take({ pool: "de", session: "r" }), n);
        await take({ pool: "de", session: "t", sessionTtlSeconds: 1 });
        await sleep(1300);
        const fresh = await store.acquire({ pool: "de", session: "t", sessionTtlSeconds: 1 });
        assert.ok(fresh.ok);
        assert.equal(fresh.session, "new", "the session was forgotten after its 1 s");
        await store.release(fresh.lease.id, "ok");
        const capped = await store.acquire({ pool: "de", session: "u", sessionTtlSeconds: 99_999 });
        assert.ok(capped.ok);
        await store.release(capped.lease.id, "ok");
        await sleep(1300);
        const still = await store.acquire({ pool: "de", session: "u" });
        assert.equal(still.ok && still.session, "kept", "a long ttl is clamped to the pool's 60 s, not dropped");
        if (still.ok) await store.release(still.lease.id, "ok");
    });

    test("strict: a busy member is a 503, an ineligible or removed one is session-gone", async () => {
        const m = await take({ pool: "de", session: "k", strict: true });
        const held = await store.acquire({ pool: "de", session: "k" });
        assert.ok(held.ok && held.lease.proxyId === m);
        const busy = await store.acquire({ pool: "de", session: "k", strict: true });
        assert.equal(!busy.ok && busy.reason, "none-available", "a busy member is waited for, not left");
        await store.release(held.ok ? held.lease.id : "", "ok");
        store.setEligible(m, false);
        await sleep(200);
        const gone = await store.acquire({ pool: "de", session: "k", strict: true });
        assert.deepEqual(gone, { ok: false, reason: "session-gone", member: m, retryAfterSeconds: 0 });
        store.setEligible(m, true);
        store.setMembers(
            members.filter((x) => x.id !== m),
            pools,
        );
        await sleep(200);
        const removed = await store.acquire({ pool: "de", session: "k", strict: true });
        assert.equal(!removed.ok && removed.reason, "session-gone");
        const moved = await store.acquire({ pool: "de", session: "k" });
        assert.ok(moved.ok && moved.lease.proxyId !== m && moved.session === "rebound");
    });
});
