/**
 * Per-site politeness in both lease stores — the memory manager and the Redis store (its Lua, a real
 * redis-server) — checked by the same steps: a rule's maxConcurrency across the pool (a suffix rule
 * groups a site's subdomains; an exact rule wins over it), counted down by release and by expiry;
 * minIntervalMs per member; a pool's restAfterOkSeconds; `target-busy` only when politeness is what
 * stops the grant; and a gateway retry taking over the slot of the attempt it leaves.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { publishedRedisStore } from "../helpers/redis-lease-store";
import type { RedisLeaseStore } from "../../src/service/store";
import {
    LeaseManager,
    type AcquireRequest,
    type AcquireResult,
    type PoolLeaseSettings,
    type ReleaseOutcome,
} from "../../src/service/leases";
import { sleep } from "../helpers/harness";

interface Store {
    acquire(req: AcquireRequest): AcquireResult | Promise<AcquireResult>;
    release(id: string, outcome: ReleaseOutcome): unknown;
    setMembers(members: typeof MEMBERS, pools: Record<string, PoolLeaseSettings>): void;
}

const members = (pool: string, n: number) =>
    Array.from({ length: n }, (_, i) => ({ id: `${pool}-${i}`, pool, eligible: true }));
const MEMBERS = [
    ...members("cap", 4),
    ...members("gap", 2),
    ...members("rest", 1),
    ...members("sess", 2),
    ...members("drop", 2),
    ...members("retry", 3),
];
const POOLS: Record<string, PoolLeaseSettings> = {
    cap: {
        cooldownSeconds: 0,
        targets: [
            { host: ".shop.example", maxConcurrency: 2 },
            { host: "api.shop.example", maxConcurrency: 1 },
        ],
    },
    gap: { cooldownSeconds: 0, targets: [{ host: "slow.example", minIntervalMs: 1500 }] },
    rest: { cooldownSeconds: 0, restAfterOkSeconds: 60 },
    sess: { cooldownSeconds: 0, targets: [{ host: "t.example", minIntervalMs: 60_000 }] },
    drop: { cooldownSeconds: 0, targets: [{ host: "d.example", maxConcurrency: 1 }] },
    retry: { cooldownSeconds: 0, targets: [{ host: "r.example", maxConcurrency: 1 }] },
};

async function granted(store: Store, req: AcquireRequest) {
    const r = await store.acquire(req);
    assert.ok(r.ok, `expected a lease for ${JSON.stringify(req)}, got ${JSON.stringify(r)}`);
    return r.lease;
}

async function busy(store: Store, req: AcquireRequest, rule: string) {
    const r = await store.acquire(req);
    assert.equal(r.ok, false, `expected target-busy for ${JSON.stringify(req)}, got ${JSON.stringify(r)}`);
    assert.ok(!r.ok && r.reason === "target-busy", JSON.stringify(r));
    assert.equal(r.rule, rule);
    assert.ok(r.retryAfterSeconds >= 1, JSON.stringify(r));
    return r;
}

async function checkMaxConcurrency(store: Store): Promise<void> {
    const a = await granted(store, { pool: "cap", target: "www.shop.example" });
    await granted(store, { pool: "cap", target: "SHOP.example." }); // the rule's own host, normalised
    await busy(store, { pool: "cap", target: "img.shop.example" }, ".shop.example");
    // Other sites, and the exact rule (its own count), still get members.
    const other = await granted(store, { pool: "cap", target: "other.example" });
    const api = await granted(store, { pool: "cap", target: "api.shop.example" });
    await busy(store, { pool: "cap", target: "api.shop.example" }, "api.shop.example");
    // "notshop.example" does not end in ".shop.example": no rule.
    await store.release(other.id, "ok");
    await granted(store, { pool: "cap", target: "notshop.example" }).then((l) => store.release(l.id, "ok"));
    await store.release(api.id, "ok");
    // A release frees the site's slot.
    await store.release(a.id, "ok");
    await granted(store, { pool: "cap", target: "img.shop.example", ttlSeconds: 1 });
    await busy(store, { pool: "cap", target: "www.shop.example" }, ".shop.example");
    // So does an expiry.
    await sleep(1300);
    await granted(store, { pool: "cap", target: "www.shop.example" });
}

async function checkMinInterval(store: Store): Promise<void> {
    const t0 = Date.now();
    const x = await granted(store, { pool: "gap", target: "slow.example" });
    await store.release(x.id, "ok");
    const y = await granted(store, { pool: "gap", target: "slow.example" });
    assert.notEqual(y.proxyId, x.proxyId, "the first member is inside its spacing for the site");
    await store.release(y.id, "ok");
    // Both members are free but were granted for the site less than 1.5 s ago.
    if (Date.now() - t0 < 1200) await busy(store, { pool: "gap", target: "slow.example" }, "slow.example");
    // Another site may use them at once.
    await granted(store, { pool: "gap", target: "fast.example" }).then((l) => store.release(l.id, "ok"));
    await sleep(Math.max(0, t0 + 1700 - Date.now()));
    const z = await granted(store, { pool: "gap", target: "slow.example" });
    await store.release(z.id, "ok");
}

async function checkRestAfterOk(store: Store): Promise<void> {
    const a = await granted(store, { pool: "rest", target: "x.example" });
    await store.release(a.id, "ok");
    const again = await store.acquire({ pool: "rest", target: "x.example" });
    // The pool's rest (60 s), not the store's (0): resting is not politeness, so a plain none-available.
    assert.ok(!again.ok && again.reason === "none-available", JSON.stringify(again));
    assert.ok(!again.ok && again.retryAfterSeconds > 50, JSON.stringify(again));
    await granted(store, { pool: "rest", target: "y.example" }).then((l) => store.release(l.id, "ok"));
}

async function checkSession(store: Store): Promise<void> {
    const req = { pool: "sess", target: "t.example", session: "s1" };
    const a = await granted(store, req);
    await store.release(a.id, "ok");
    // Its member is inside its spacing for the site: the session moves, as for a busy member.
    const b = await store.acquire(req);
    assert.ok(b.ok, JSON.stringify(b));
    assert.notEqual(b.lease.proxyId, a.proxyId);
    assert.equal(b.rebound, true);
    await store.release(b.lease.id, "ok");
    await busy(store, req, "t.example");
}

async function checkMemberRemoved(store: Store, settle: () => Promise<unknown>): Promise<void> {
    const req = { pool: "drop", target: "d.example" };
    const a = await granted(store, req);
    await busy(store, req, "d.example");
    // Its member leaves the stack: the lease ends, and so does its count for the site.
    store.setMembers(
        MEMBERS.filter((m) => m.id !== a.proxyId),
        POOLS,
    );
    await settle();
    const b = await granted(store, req);
    assert.notEqual(b.proxyId, a.proxyId);
    await store.release(b.id, "ok");
}

/**
 * A gateway retry (AcquireRequest.replaces) takes over the slot of the attempt it leaves: the failed
 * lease ends in the same step, before the pick, so a site at its maxConcurrency does not refuse it.
 */
async function checkRetryTakesOverSlot(store: Store): Promise<void> {
    const req = { pool: "retry", target: "r.example" };
    const failed = await granted(store, req);
    // Without taking the slot over, the retry is refused by the slot it is leaving.
    await busy(store, { ...req, exclude: [failed.proxyId] }, "r.example");
    const retry = await store.acquire({
        ...req,
        exclude: [failed.proxyId],
        replaces: { leaseId: failed.id, outcome: "error" },
    });
    assert.ok(retry.ok, JSON.stringify(retry));
    assert.notEqual(retry.lease.proxyId, failed.proxyId, "the failed member stays out");
    assert.equal(retry.replaced?.id, failed.id, "the acquire says which lease it ended");
    // The bound holds: one lease in flight for the site, the retry's.
    await busy(store, req, "r.example");
    // The failed lease is over: releasing it again finds nothing to release.
    const again = (await store.release(failed.id, "error")) as { ok: boolean };
    assert.equal(again.ok, false);
    // A replaced lease that already ended is passed over; the acquire still answers as it would.
    await busy(store, { ...req, replaces: { leaseId: failed.id, outcome: "error" } }, "r.example");
    await store.release(retry.lease.id, "ok");
    const free = await granted(store, { ...req, replaces: { leaseId: "never-issued", outcome: "error" } });
    await store.release(free.id, "ok");
}

describe("the memory lease manager", () => {
    const leases = new LeaseManager({ targetCooldownSeconds: 0, initiallyEligible: true });
    leases.setMembers(MEMBERS, POOLS);
    test("caps a site's leases in flight per rule", () => checkMaxConcurrency(leases));
    test("spaces a member's grants for a site", () => checkMinInterval(leases));
    test("rests a member after ok as its pool says", () => checkRestAfterOk(leases));
    test("moves a session off a member inside its spacing", () => checkSession(leases));
    test("ends a removed member's count for the site", () => checkMemberRemoved(leases, async () => undefined));
    test("lets a gateway retry take over the slot it leaves", () => checkRetryTakesOverSlot(leases));
});

describe("the Redis lease store (the rules in Lua)", () => {
    let redis: Awaited<ReturnType<typeof publishedRedisStore>>;
    let store: RedisLeaseStore;
    before(async () => {
        redis = await publishedRedisStore("egress:polite:", MEMBERS, POOLS);
        store = redis.store;
    });
    after(async () => {
        await redis?.close();
    });
    test("caps a site's leases in flight per rule", () => checkMaxConcurrency(store));
    test("spaces a member's grants for a site", () => checkMinInterval(store));
    test("rests a member after ok as its pool says", () => checkRestAfterOk(store));
    test("moves a session off a member inside its spacing", () => checkSession(store));
    test("ends a removed member's count for the site", () => checkMemberRemoved(store, () => sleep(300)));
    test("lets a gateway retry take over the slot it leaves", () => checkRetryTakesOverSlot(store));
});
