/**
 * Two lease stores on one Redis, as two replicas of `egress serve` would hold them (two lease managers
 * in one test process: two serve processes on one stack are not possible yet, the second refuses to
 * start beside the first). Many concurrent acquires spread over both never put a proxy in two live
 * leases (checked against a model); a lease taken on one is released on the other; a session keeps its
 * proxy across them; an expired lease answers 410 on either.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createLogger } from "../../src/log/logger";
import { RedisLeaseStore } from "../../src/service/store";
import { startRedis, TestRedis } from "../helpers/redis";

let redis: TestRedis;
let a: RedisLeaseStore;
let b: RedisLeaseStore;
const MEMBERS = Array.from({ length: 8 }, (_, i) => ({ id: `web-${i}`, pool: "web" }));
const POOLS = { web: { cooldownSeconds: 0, sessionTtlSeconds: 600 } };
const log = createLogger({ level: "warn" });

/** A store as a replica holds it: every member published, all healthy. */
async function replica(): Promise<RedisLeaseStore> {
    const s = new RedisLeaseStore({ url: redis.url, prefix: "egress:replicas:", log, targetCooldownSeconds: 0 });
    assert.equal(await s.connect(5000), true, "connects to the test's redis-server");
    s.setMembers(
        MEMBERS.map((m) => ({ ...m, eligible: true })),
        POOLS,
    );
    return s;
}

before(async () => {
    redis = await startRedis();
    a = await replica();
    b = await replica();
    // The publications are coalesced to the next microtask, then one round trip each.
    await new Promise((r) => setTimeout(r, 200));
});
after(async () => {
    await a?.close();
    await b?.close();
    await redis?.cleanup();
});

test("400 concurrent acquires over two replicas never put a proxy in two live leases", async () => {
    const holder = new Map<string, string>(); // proxy → live lease id: the model
    let granted = 0;
    let refused = 0;
    const client = async (i: number) => {
        for (let k = 0; k < 20; k++) {
            const store = (i + k) % 2 === 0 ? a : b;
            const r = await store.acquire({ ttlSeconds: 60 });
            if (!r.ok) {
                assert.equal(r.reason, "none-available");
                refused++;
                continue;
            }
            granted++;
            const other = holder.get(r.lease.proxyId);
            assert.equal(other, undefined, `${r.lease.proxyId} granted as ${r.lease.id} while ${other} still holds it`);
            holder.set(r.lease.proxyId, r.lease.id);
            await new Promise((res) => setImmediate(res));
            // Out of the model before the release is sent: once Redis ran it, anyone may take the proxy.
            holder.delete(r.lease.proxyId);
            const rel = await (store === a ? b : a).release(r.lease.id, "ok");
            assert.equal(rel.ok, true, "released on the other replica");
        }
    };
    await Promise.all(Array.from({ length: 20 }, (_, i) => client(i)));
    assert.equal(granted + refused, 400);
    assert.ok(granted >= 100, `most acquires are granted (granted ${granted}, refused ${refused})`);
    // Nothing leaked: every member can be leased again, once.
    const all = await Promise.all(MEMBERS.map((_, i) => (i % 2 ? a : b).acquire({ ttlSeconds: 60 })));
    assert.deepEqual(all.map((r) => r.ok && r.lease.proxyId).sort(), MEMBERS.map((m) => m.id).sort());
    for (const r of all) if (r.ok) await a.release(r.lease.id, "ok");
});

test("a session keeps its proxy across replicas; a released lease is released once", async () => {
    const first = await a.acquire({ pool: "web", session: "s1", ttlSeconds: 60 });
    assert.ok(first.ok);
    assert.equal(first.session, "new");
    assert.equal((await b.release(first.lease.id, "ok")).ok, true);
    assert.deepEqual(await b.release(first.lease.id, "ok"), { ok: false, reason: "unknown-lease" });
    for (const store of [b, a, b]) {
        const again = await store.acquire({ pool: "web", session: "s1", ttlSeconds: 60 });
        assert.ok(again.ok);
        assert.equal(again.lease.proxyId, first.lease.proxyId, "the same proxy, whichever replica is asked");
        assert.equal(again.session, "kept");
        assert.equal((await (store === a ? b : a).release(again.lease.id, "ok")).ok, true);
    }
});

test("a session whose proxy is held moves (rebound); a proxy in a live lease is not leased by the other replica", async () => {
    const s = await a.acquire({ pool: "web", session: "s2", ttlSeconds: 60 });
    assert.ok(s.ok);
    // Hold everything else through b.
    const held = [];
    for (;;) {
        const r = await b.acquire({ pool: "web", ttlSeconds: 60 });
        if (!r.ok) break;
        held.push(r.lease);
    }
    assert.equal(held.length, MEMBERS.length - 1);
    assert.ok(!held.some((l) => l.proxyId === s.lease.proxyId), "the session's proxy stays with its lease");
    await a.release(held[0].id, "ok");
    const moved = await b.acquire({ pool: "web", session: "s2", ttlSeconds: 60 });
    assert.ok(moved.ok);
    assert.equal(moved.session, "rebound");
    assert.equal(moved.lease.proxyId, held[0].proxyId);
    for (const l of [s.lease, moved.lease, ...held.slice(1)]) assert.equal((await b.release(l.id, "ok")).ok, true);
});

test("an expired lease answers `expired` on either replica; lease ids are unguessable UUIDs", async () => {
    const r = await a.acquire({ ttlSeconds: 1 });
    assert.ok(r.ok);
    assert.match(r.lease.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    await new Promise((res) => setTimeout(res, 1200));
    const late = await b.release(r.lease.id, "ok");
    assert.equal(late.ok, false);
    assert.equal(!late.ok && late.reason, "expired");
});

test("a blocked release rests the proxy for that target on both replicas", async () => {
    const r = await a.acquire({ pool: "web", target: "shop.example", ttlSeconds: 60 });
    assert.ok(r.ok);
    await b.release(r.lease.id, "blocked");
    const seen = [];
    for (;;) {
        const n = await (seen.length % 2 ? a : b).acquire({ pool: "web", target: "shop.example", ttlSeconds: 60 });
        if (!n.ok) {
            assert.ok(n.retryAfterSeconds >= 1);
            break;
        }
        seen.push(n.lease);
    }
    assert.equal(seen.length, MEMBERS.length - 1);
    assert.ok(!seen.some((l) => l.proxyId === r.lease.proxyId), "the blocked proxy is not leased for shop.example");
    for (const l of seen) await a.release(l.id, "ok");
});
