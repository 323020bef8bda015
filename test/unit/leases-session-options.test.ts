/**
 * The username's session options and label selector in the memory LeaseManager, on a fake clock:
 * `sessionTtlSeconds` (`_ttl_`, clamped to the pool's), `strict` (session-gone vs busy), `rotate`, and
 * `where` (labels, `zone` among them). test/service/username-options.test.ts runs the same on Redis.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { LeaseManager } from "../../src/service/leases";
import { take, T0 } from "../helpers/lease-manager";

function manager(sessionTtlSeconds = 60) {
    const clock = { t: T0 };
    let n = 0;
    const m = new LeaseManager({ now: () => clock.t, newLeaseId: () => `L${++n}`, initiallyEligible: true });
    const members = [
        { id: "web-0", pool: "web", labels: { country: "de" } },
        { id: "web-1", pool: "web", labels: { country: "de" }, zone: "a" },
        { id: "web-2", pool: "web", labels: { country: "us" }, zone: "a" },
    ];
    const pools = { web: { cooldownSeconds: 0, sessionTtlSeconds } };
    m.setMembers(members, pools);
    return { m, members, pools, advance: (ms: number) => (clock.t += ms) };
}
const used = (m: LeaseManager, req: Parameters<LeaseManager["acquire"]>[0]) => {
    const l = take(m, req);
    m.release(l.id, "ok");
    return l.proxyId;
};

test("a selector takes only matching members; zone is the zone label; a mismatch moves a session", () => {
    const { m } = manager();
    for (let i = 0; i < 3; i++) assert.equal(used(m, { where: { country: "us" } }), "web-2");
    assert.equal(used(m, { where: { country: "de", zone: "a" } }), "web-1");
    assert.equal(used(m, { zone: "a", where: { country: "de" } }), "web-1");
    assert.equal(m.acquire({ where: { country: "fr" } }).ok, false);
    const s = used(m, { session: "s", where: { country: "us" } });
    assert.equal(s, "web-2");
    const r = m.acquire({ session: "s", where: { country: "de" } });
    assert.ok(r.ok && r.rebound && r.lease.proxyId !== "web-2");
});

test("sessionTtlSeconds shortens the pool's session TTL, never lengthens it", () => {
    const { m, advance } = manager(60);
    used(m, { session: "short", sessionTtlSeconds: 5 });
    used(m, { session: "long", sessionTtlSeconds: 99_999 });
    advance(5_000);
    assert.equal(m.sessionMember("short"), undefined, "forgotten after its own 5 s");
    assert.ok(m.sessionMember("long"), "still there");
    advance(55_000);
    assert.equal(m.sessionMember("long"), undefined, "clamped to the pool's 60 s");
});

test("rotate: another member now, then the session sticks to it", () => {
    const { m } = manager();
    const a = used(m, { session: "r" });
    const b = used(m, { session: "r", rotate: true });
    assert.notEqual(b, a);
    assert.equal(used(m, { session: "r" }), b);
    // Alone in scope, a rotation has nowhere to go: refused, not the same member again.
    const one = used(m, { session: "q", where: { country: "us" } });
    const r = m.acquire({ session: "q", rotate: true, where: { country: "us" } });
    assert.equal(!r.ok && r.reason, "none-available");
    assert.equal(used(m, { session: "q", where: { country: "us" } }), one);
});

test("strict: busy is none-available; ineligible or removed is session-gone; without strict it moves", () => {
    const { m, members, pools } = manager();
    const a = used(m, { session: "k", strict: true });
    const held = take(m, { session: "k" });
    assert.equal(held.proxyId, a);
    const busy = m.acquire({ session: "k", strict: true });
    assert.equal(!busy.ok && busy.reason, "none-available");
    m.release(held.id, "ok");
    m.setEligible(a, false);
    assert.deepEqual(m.acquire({ session: "k", strict: true }), {
        ok: false,
        reason: "session-gone",
        member: a,
        retryAfterSeconds: 0,
    });
    m.setEligible(a, true);
    m.setMembers(
        members.filter((x) => x.id !== a),
        pools,
    );
    const gone = m.acquire({ session: "k", strict: true });
    assert.equal(!gone.ok && gone.reason, "session-gone");
    const moved = m.acquire({ session: "k" });
    assert.ok(moved.ok && moved.rebound && moved.lease.proxyId !== a);
});
