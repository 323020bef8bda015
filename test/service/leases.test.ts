/**
 * Leases against real proxies: healthy-only, never two leases on one proxy, least recently used first,
 * pool and target cooldowns, expiry, 503 + Retry-After, and a killed proxy that turns unhealthy within
 * two probe intervals and is never leased. Sticky sessions: the same proxy again, a move (`rebound`)
 * when the session's proxy dies, and 400 for a key the gateway could not carry.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import { settledConverge, startTestService, TestService, TOKENS } from "../helpers/service";
import { getViaProxy, startTargetServer } from "../helpers/net";
import { leaseClock } from "../helpers/lease-clock";
import { teardown, waitFor } from "../helpers/harness";

const PROBE_MS = 300;
const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 3, maxReplicas: 5, cooldownSeconds: 1 }],
};
// Cooldowns and TTLs are whole seconds: the test moves the lease rules' clock past them instead of sleeping.
const clock = leaseClock();
let svc: TestService;
let target: Awaited<ReturnType<typeof startTargetServer>>;
const cleanup = teardown();
before(async () => {
    target = await startTargetServer();
    cleanup.own(target);
    svc = await startTestService(config, { probeIntervalMs: PROBE_MS, leaseClock: clock.now });
    cleanup.own(svc);
    await settledConverge(svc);
    await waitFor(
        "3 healthy",
        async () => (await svc.call("GET", "/v1/proxies?state=healthy")).body.proxies.length === 3,
        20_000,
    );
});

const lease = (body: object = {}) => svc.call("POST", "/v1/leases", { token: TOKENS.lease, body });
const release = (id: string, outcome: string) =>
    svc.call("POST", `/v1/leases/${id}/release`, { token: TOKENS.lease, body: { outcome } });

test("the egress_proxies gauge is current at scrape time", async () => {
    const metrics = String((await svc.call("GET", "/metrics", { token: null })).body);
    assert.match(metrics, /^egress_proxies\{pool="web",state="healthy"\} 3$/m);
    assert.match(metrics, /^egress_proxies\{pool="web",state="leased"\} 0$/m);
});

test("a lease hands out a working proxy; all busy → 503 with Retry-After", async () => {
    const got = [];
    for (let i = 0; i < 3; i++) {
        const r = await lease({ pool: "web", ttlSeconds: 60 });
        assert.equal(r.status, 201, JSON.stringify(r.body));
        got.push(r.body.lease);
    }
    assert.equal(new Set(got.map((l) => l.proxy.id)).size, 3, "three different proxies");
    const via = await getViaProxy(got[0].proxy.port, `http://127.0.0.1:${target.port}/leased`);
    assert.equal(via.body, "hello /leased");
    const none = await lease({ pool: "web" });
    assert.equal(none.status, 503);
    assert.equal(none.body.error.code, "none_available");
    assert.ok(Number(none.headers.get("retry-after")) >= 1);
    for (const l of got) assert.equal((await release(l.id, "ok")).status, 200);
    assert.equal((await release(got[0].id, "ok")).status, 404, "a lease is released once");
});

test("pool cooldown: a released proxy rests, then the least recently used comes first", async () => {
    clock.advance(1100); // previous test's releases cool down
    const a = (await lease()).body.lease;
    await release(a.id, "ok");
    const b = (await lease()).body.lease;
    assert.notEqual(b.proxy.id, a.proxy.id, "the just-released proxy is cooling");
    const c = (await lease()).body.lease;
    assert.notEqual(c.proxy.id, a.proxy.id);
    assert.equal((await lease()).status, 503, "the third is cooling");
    clock.advance(1100);
    const d = (await lease()).body.lease;
    assert.equal(d.proxy.id, a.proxy.id, "back after its cooldown");
    for (const l of [b, c, d]) await release(l.id, "ok");
});

test("per-target cooldown and `blocked`: the same target does not get the same proxy again soon", async () => {
    clock.advance(1100);
    const first = (await lease({ target: "shop.example" })).body.lease;
    await release(first.id, "blocked");
    clock.advance(1100); // pool cooldown over, target cooldown (blocked) is not
    const seen = new Set<string>();
    const held = [];
    for (;;) {
        const r = await lease({ target: "shop.example" });
        if (r.status !== 201) break;
        held.push(r.body.lease);
        seen.add(r.body.lease.proxy.id);
    }
    assert.ok(!seen.has(first.proxy.id), "the blocked proxy is not leased for that target");
    assert.equal(seen.size, 2);
    const other = await lease({ target: "news.example" });
    assert.equal(other.status, 201);
    assert.equal(other.body.lease.proxy.id, first.proxy.id, "other targets may use it");
    for (const l of [...held, other.body.lease]) await release(l.id, "ok");
});

test("leases expire after their TTL; a late release gets 410", async () => {
    clock.advance(1100);
    const l = (await lease({ ttlSeconds: 1 })).body.lease;
    clock.advance(1300);
    assert.equal((await release(l.id, "ok")).status, 410);
});

test("50 racing lease requests never put one proxy in two leases", async () => {
    clock.advance(1100);
    const results = await Promise.all(Array.from({ length: 50 }, () => lease({ ttlSeconds: 30 })));
    const granted = results.filter((r) => r.status === 201).map((r) => r.body.lease);
    assert.equal(granted.length, 3);
    assert.equal(new Set(granted.map((l) => l.proxy.id)).size, 3);
    assert.ok(results.filter((r) => r.status !== 201).every((r) => r.status === 503));
    for (const l of granted) await release(l.id, "ok");
});

/** SIGKILLs the local proxy process of member `id` (its pid is in the local provider's service file). */
function killMember(id: string): void {
    const file = fs.readdirSync(`${svc.runDir}/local/svc`).find((f) => f.includes(id) && f.endsWith(".json"));
    assert.ok(file, `no service file for ${id} in ${svc.runDir}/local/svc`);
    const { pid } = JSON.parse(fs.readFileSync(`${svc.runDir}/local/svc/${file}`, "utf8"));
    process.kill(pid, "SIGKILL");
}

test("a session gets the same proxy again, its pool cooldown notwithstanding", async () => {
    clock.advance(1100);
    const first = await lease({ pool: "web", session: "cart.42" });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    assert.equal(first.body.lease.session, "cart.42");
    assert.equal(first.body.lease.rebound, false);
    const released = await release(first.body.lease.id, "ok");
    assert.equal(released.body.lease.session, "cart.42");
    const second = await lease({ pool: "web", session: "cart.42" });
    assert.equal(second.status, 201, JSON.stringify(second.body));
    assert.equal(
        second.body.lease.proxy.id,
        first.body.lease.proxy.id,
        "same proxy, though it cools for 1 s for everyone else",
    );
    assert.equal(second.body.lease.rebound, false);
    const plain = await lease({ pool: "web" });
    assert.equal(plain.status, 201);
    assert.equal(plain.body.lease.session, undefined);
    assert.equal(plain.body.lease.rebound, undefined, "no session, no rebound field");
    for (const l of [second.body.lease, plain.body.lease]) await release(l.id, "ok");
});

test("a bad session key is a 400 naming the rule", async () => {
    for (const [session, rule] of [
        [
            "a_b",
            "may contain only 1–128 letters, digits, '-', '.' or '~' (no '_': the gateway's proxy username separates options with it)",
        ],
        ["", "must not be empty"],
        ["x".repeat(129), "must be at most 128 characters"],
        [
            "caf\u00e9",
            "may contain only 1–128 letters, digits, '-', '.' or '~' (no '_': the gateway's proxy username separates options with it)",
        ],
    ]) {
        const r = await lease({ pool: "web", session });
        assert.equal(r.status, 400, session);
        assert.equal(r.body.error.code, "invalid_request");
        assert.equal(r.body.error.message, `invalid lease request: session: ${rule}`);
    }
    const n = await lease({ session: 42 });
    assert.equal(n.status, 400);
    assert.match(n.body.error.message, /^invalid lease request: session: .*string/);
    const longest = await lease({ pool: "web", session: "x".repeat(128) });
    assert.equal(longest.status, 201, "128 characters are fine");
    await release(longest.body.lease.id, "ok");
});

test("a killed proxy turns unhealthy within two probe intervals and is never leased", { timeout: 30_000 }, async () => {
    clock.advance(1100);
    const victim = (await svc.call("GET", "/v1/proxies")).body.proxies.find((p: any) => p.id === "web-1");
    killMember("web-1");
    const killedAt = Date.now();
    await waitFor(
        "web-1 unhealthy",
        async () =>
            (await svc.call("GET", "/v1/proxies?state=unhealthy")).body.proxies.some((p: any) => p.id === "web-1"),
        10_000,
        50,
    );
    const took = Date.now() - killedAt;
    // Two intervals plus one probe timeout of slack for a probe already in flight.
    assert.ok(took <= 2 * PROBE_MS + 1500, `unhealthy after ${took} ms`);
    for (let i = 0; i < 10; i++) {
        const r = await lease({ ttlSeconds: 5 });
        if (r.status === 201) {
            assert.notEqual(r.body.lease.proxy.id, victim.id);
            await release(r.body.lease.id, "ok");
        }
    }
});

test("a session moves when its proxy dies: rebound, then sticks to the new one", { timeout: 30_000 }, async () => {
    clock.advance(1100);
    const first = (await lease({ pool: "web", session: "login.7" })).body.lease;
    await release(first.id, "ok");
    killMember(first.proxy.id);
    await waitFor(
        `${first.proxy.id} unhealthy`,
        async () =>
            (await svc.call("GET", "/v1/proxies?state=unhealthy")).body.proxies.some(
                (p: any) => p.id === first.proxy.id,
            ),
        10_000,
        50,
    );
    const moved = await lease({ pool: "web", session: "login.7" });
    assert.equal(moved.status, 201, JSON.stringify(moved.body));
    assert.notEqual(moved.body.lease.proxy.id, first.proxy.id);
    assert.equal(moved.body.lease.rebound, true);
    const via = await getViaProxy(moved.body.lease.proxy.port, `http://127.0.0.1:${target.port}/moved`);
    assert.equal(via.body, "hello /moved", "the new proxy works");
    await release(moved.body.lease.id, "ok");
    const again = await lease({ pool: "web", session: "login.7" });
    assert.equal(again.body.lease.proxy.id, moved.body.lease.proxy.id);
    assert.equal(again.body.lease.rebound, false);
    await release(again.body.lease.id, "ok");
    // The session tests so far: cart.42 new then kept, the 128-character key new, login.7 new, rebound, kept.
    const metrics = String((await svc.call("GET", "/metrics", { token: null })).body);
    for (const [result, n] of [
        ["new", 3],
        ["kept", 2],
        ["rebound", 1],
    ] as const)
        assert.match(
            metrics,
            new RegExp(`^egress_lease_sessions_total\\{pool="web",result="${result}"\\} ${n}$`, "m"),
            result,
        );
});
