/**
 * Sticky sessions in the LeaseManager with a fake clock: a session keeps its member while that member
 * is eligible, unleased and not blocked for the target; otherwise it moves (`rebound: true`). Sessions
 * are scoped by pool, expire after their pool's `sessionTtlSeconds` idle, and are capped.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { AcquireRequest, AcquireResult, LeaseManager } from "../../src/service/leases";
import { Fleet, HealthSource } from "../../src/service/fleet/fleet";
import { immediate } from "../../src/service/store/types";
import type { PoolConfig } from "../../src/model";
import { localMember } from "../helpers/members";
import { setup, T0 } from "../helpers/lease-manager";

function granted(m: LeaseManager, req: AcquireRequest): Extract<AcquireResult, { ok: true }> {
    const r = m.acquire(req);
    assert.ok(r.ok, `expected a lease, got ${JSON.stringify(r)}`);
    return r;
}

test("a session gets the same member again, skipping the pool cooldown; the LRU order is untouched", () => {
    const { m, advance } = setup({}, { web: { cooldownSeconds: 60 } });
    const first = granted(m, { session: "s1" });
    assert.deepEqual(first, {
        ok: true,
        rebound: false,
        lease: { id: "L1", proxyId: "web-0", pool: "web", session: "s1", leasedAt: T0, expiresAt: T0 + 300_000 },
    });
    advance(1000);
    m.release(first.lease.id, "ok");
    advance(1000);
    const again = granted(m, { session: "s1" });
    assert.equal(again.lease.proxyId, "web-0", "the session's member, though it cools for 60 s");
    assert.equal(again.rebound, false);
    m.release(again.lease.id, "ok");
    // Without a session the cooling member is not leased, and the others go in LRU order.
    assert.deepEqual(
        [granted(m, {}), granted(m, {})].map((r) => [r.lease.proxyId, r.rebound]),
        [
            ["web-1", undefined],
            ["web-2", undefined],
        ],
    );
    assert.equal(m.acquire({}).ok, false, "web-0 still cools for leases without the session");
});

test("a session moves off a member that turns ineligible, and says so once", () => {
    const { m } = setup();
    const a = granted(m, { session: "s1" });
    m.release(a.lease.id, "ok");
    m.setEligible("web-0", false);
    const b = granted(m, { session: "s1" });
    assert.deepEqual([b.lease.proxyId, b.rebound], ["web-1", true]);
    m.release(b.lease.id, "ok");
    m.setEligible("web-0", true);
    const c = granted(m, { session: "s1" });
    assert.deepEqual(
        [c.lease.proxyId, c.rebound],
        ["web-1", false],
        "bound to web-1 now; web-0's return does not pull it back",
    );
    assert.equal(m.sessionMember("s1"), "web-1");
});

test("a draining member loses its sessions (Fleet marks it ineligible)", () => {
    const { m } = setup({ initiallyEligible: false });
    const healthy: HealthSource = { setMembers() {}, get: () => ({ state: "healthy" }) };
    const fleet = new Fleet(m, healthy);
    const member = (i: number) => localMember(i, 4000 + i);
    fleet.sync([member(0), member(1)], [{ name: "web", cooldownSeconds: 0, sessionTtlSeconds: 600 } as PoolConfig]);
    const a = immediate(fleet.acquire({ pool: "web", session: "s1" }));
    assert.ok(a.ok);
    assert.deepEqual([a.lease.proxy.id, a.lease.session, a.lease.rebound], ["web-0", "s1", false]);
    fleet.release(a.lease.id, "ok");
    fleet.setDraining("web-0", T0 + 60_000);
    const b = immediate(fleet.acquire({ pool: "web", session: "s1" }));
    assert.ok(b.ok);
    assert.deepEqual([b.lease.proxy.id, b.lease.rebound], ["web-1", true]);
});

test("a member leased by someone else is never leased twice: the session moves", () => {
    const { m } = setup();
    const a = granted(m, { session: "s1" });
    m.release(a.lease.id, "ok");
    const other = granted(m, {});
    assert.equal(other.lease.proxyId, "web-1", "LRU: web-1 and web-2 were never used");
    const other2 = granted(m, {});
    const other3 = granted(m, {});
    assert.deepEqual([other2.lease.proxyId, other3.lease.proxyId], ["web-2", "web-0"]);
    m.release(other.lease.id, "ok");
    const b = granted(m, { session: "s1" });
    assert.deepEqual([b.lease.proxyId, b.rebound], ["web-1", true], "web-0 is held by another lease");
    // Two concurrent leases of one session: the second cannot share the member, so the session moves.
    m.release(other2.lease.id, "ok");
    const c = granted(m, { session: "s1" });
    assert.deepEqual([c.lease.proxyId, c.rebound], ["web-2", true]);
    assert.equal(m.sessionMember("s1"), "web-2");
});

test("with a target: the plain rest does not move a session, a block does", () => {
    const { m, advance } = setup();
    const a = granted(m, { session: "s1", target: "shop.example" });
    m.release(a.lease.id, "ok");
    assert.ok(m.targetCooldownUntil("shop.example", "web-0") > T0, "web-0 rests 30 s for shop.example");
    const b = granted(m, { session: "s1", target: "shop.example" });
    assert.deepEqual([b.lease.proxyId, b.rebound, b.lease.target], ["web-0", false, "shop.example"]);
    m.release(b.lease.id, "blocked");
    const c = granted(m, { session: "s1", target: "shop.example" });
    assert.deepEqual([c.lease.proxyId, c.rebound], ["web-1", true], "shop.example blocked web-0");
    m.release(c.lease.id, "ok");
    // The block is per target: another session on another target may still stick to web-0.
    const d = granted(m, { session: "s2", target: "news.example" });
    assert.equal(d.lease.proxyId, "web-2");
    m.release(d.lease.id, "ok");
    advance(61_000); // the block ended
    const e = granted(m, { session: "s1", target: "shop.example" });
    assert.deepEqual([e.lease.proxyId, e.rebound], ["web-1", false]);
});

test("sessions are scoped by pool: the same key in two pools is two sessions", () => {
    const { m } = setup({}, { web: { cooldownSeconds: 0 }, api: { cooldownSeconds: 0 } }, [
        "web-0",
        "web-1",
        "api-0",
        "api-1",
    ]);
    const w = granted(m, { pool: "web", session: "s1" });
    const a = granted(m, { pool: "api", session: "s1" });
    assert.deepEqual([w.lease.proxyId, w.rebound, a.lease.proxyId, a.rebound], ["web-0", false, "api-0", false]);
    m.release(w.lease.id, "ok");
    m.release(a.lease.id, "ok");
    const any = granted(m, { session: "s1" });
    assert.deepEqual([any.lease.proxyId, any.rebound], ["web-1", false], "no pool named: a third session, LRU pick");
    assert.equal(m.sessionMember("s1", "web"), "web-0");
    assert.equal(m.sessionMember("s1", "api"), "api-0");
    assert.equal(m.sessionMember("s1"), "web-1");
    assert.equal(m.sessionCount, 3);
});

test("a session expires after its pool's sessionTtlSeconds idle; a live lease keeps it", () => {
    const { m, advance } = setup(
        { sessionTtlSeconds: 100 },
        { web: { cooldownSeconds: 0, sessionTtlSeconds: 10 }, api: { cooldownSeconds: 0 } },
        ["web-0", "web-1", "api-0", "api-1"],
    );
    const w = granted(m, { pool: "web", session: "s", ttlSeconds: 60 });
    const a = granted(m, { pool: "api", session: "s" });
    advance(30_000);
    assert.equal(m.sessionMember("s", "web"), "web-0", "not idle while its lease runs (30 s > 10 s TTL)");
    m.release(w.lease.id, "ok");
    m.release(a.lease.id, "ok");
    advance(9_999);
    assert.equal(m.sessionMember("s", "web"), "web-0");
    advance(1);
    assert.deepEqual(m.sweep(), { expired: 0, sessionsDropped: 1 });
    assert.equal(m.sessionMember("s", "web"), undefined, "10 s idle: forgotten");
    assert.equal(m.sessionMember("s", "api"), "api-0", "api uses the manager's default (100 s)");
    assert.equal(m.sessionCount, 1);
    // A forgotten session starts anew: the LRU pick, and not a rebind.
    const again = granted(m, { pool: "web", session: "s" });
    assert.deepEqual([again.lease.proxyId, again.rebound], ["web-1", false]);
    m.release(again.lease.id, "ok");
    advance(100_000);
    assert.deepEqual(m.sweep(), { expired: 0, sessionsDropped: 2 });
    assert.equal(m.sessionCount, 0);
});

test("a lease that expires ends the session's activity at its expiresAt", () => {
    const { m, advance } = setup({}, { web: { cooldownSeconds: 0, sessionTtlSeconds: 5 } });
    granted(m, { session: "s", ttlSeconds: 10 });
    advance(14_999); // expired at +10 s, idle since then: 4.999 s
    assert.equal(m.sessionMember("s"), "web-0");
    advance(1);
    assert.equal(m.sessionMember("s"), undefined);
});

test("a member that leaves the stack moves its sessions; no members at all → no-members, binding kept", () => {
    const { m } = setup();
    const a = granted(m, { session: "s1" });
    m.setMembers([{ id: "web-1", pool: "web" }], { web: { cooldownSeconds: 0 } });
    assert.equal(m.release(a.lease.id, "ok").ok, false);
    const b = granted(m, { session: "s1" });
    assert.deepEqual([b.lease.proxyId, b.rebound], ["web-1", true]);
    m.release(b.lease.id, "ok");
    m.setEligible("web-1", false);
    assert.deepEqual(m.acquire({ session: "s1" }), { ok: false, reason: "none-available", retryAfterSeconds: 30 });
    assert.equal(m.sessionMember("s1"), "web-1", "a refusal leaves the binding as it was");
    m.setEligible("web-1", true);
    assert.equal(granted(m, { session: "s1" }).rebound, false);
});

test("maxSessions: the session idle the longest is dropped first, never the one just used", () => {
    const { m, advance } = setup({ maxSessions: 2 });
    for (const s of ["a", "b"]) {
        m.release(granted(m, { session: s }).lease.id, "ok");
        advance(1);
    }
    m.release(granted(m, { session: "a" }).lease.id, "ok"); // a is now the most recently used
    advance(1);
    m.release(granted(m, { session: "c" }).lease.id, "ok");
    assert.equal(m.sessionCount, 2);
    assert.equal(m.sessionMember("b"), undefined, "b was idle the longest");
    assert.equal(m.sessionMember("a"), "web-0");
    assert.ok(m.sessionMember("c"));
});

test("option validation names the option", () => {
    assert.throws(() => new LeaseManager({ sessionTtlSeconds: -1 }), {
        message: "LeaseManager option `sessionTtlSeconds` must be a finite number ≥ 0, got -1",
    });
    assert.throws(() => new LeaseManager({ maxSessions: Number.NaN }), {
        message: "LeaseManager option `maxSessions` must be a finite number ≥ 0, got NaN",
    });
});
