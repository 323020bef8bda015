/**
 * LeaseManager semantics with a fake clock and predictable lease ids (test/helpers/lease-manager.ts): LRU
 * order, pool cooldowns, expiry, eligibility, membership changes and Retry-After values. Per-target
 * cooldowns and blocked escalation: leases-target-cooldowns.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { LeaseManager } from "../../src/service/leases";
import { refused, setup, T0, take } from "../helpers/lease-manager";

test("never-used members go first in arrival order, then the oldest release", () => {
    const { m, advance } = setup();
    const [a, b, c] = [take(m), take(m), take(m)];
    assert.deepEqual([a.proxyId, b.proxyId, c.proxyId], ["web-0", "web-1", "web-2"]);
    assert.deepEqual(a, { id: "L1", proxyId: "web-0", pool: "web", leasedAt: T0, expiresAt: T0 + 300_000 });
    advance(1);
    m.release(b.id, "ok");
    advance(1);
    m.release(c.id, "ok");
    advance(1);
    m.release(a.id, "ok");
    m.setMembers(
        ["web-0", "web-1", "web-2", "web-3"].map((id) => ({ id, pool: "web" })),
        { web: { cooldownSeconds: 0 } },
    );
    assert.deepEqual(
        [take(m), take(m), take(m), take(m)].map((l) => l.proxyId),
        ["web-3", "web-1", "web-2", "web-0"],
    );
});

test("without a pool, the least recently used member of any pool wins", () => {
    const { m, advance } = setup({}, { a: { cooldownSeconds: 0 }, b: { cooldownSeconds: 0 } }, ["a-0", "b-0"]);
    const x = take(m);
    const y = take(m);
    assert.deepEqual([x.proxyId, y.proxyId], ["a-0", "b-0"]);
    advance(5);
    m.release(y.id, "ok");
    advance(5);
    m.release(x.id, "ok");
    assert.equal(take(m).proxyId, "b-0");
    assert.equal(take(m, { pool: "a" }).proxyId, "a-0");
    assert.deepEqual(refused(m, { pool: "b" }), { ok: false, reason: "none-available", retryAfterSeconds: 1 });
});

test("pool cooldown: a released proxy rests cooldownSeconds; Retry-After counts down to the earliest", () => {
    const { m, advance } = setup({}, { web: { cooldownSeconds: 10 } }, ["web-0", "web-1"]);
    const a = take(m);
    m.release(a.id, "ok");
    const b = take(m);
    assert.equal(b.proxyId, "web-1");
    advance(1000);
    m.release(b.id, "ok");
    advance(1000);
    assert.deepEqual(refused(m), { ok: false, reason: "none-available", retryAfterSeconds: 8 });
    advance(7_999); // 1 ms before web-0 is rested
    assert.deepEqual(refused(m), { ok: false, reason: "none-available", retryAfterSeconds: 1 });
    assert.deepEqual(
        m.snapshot().map((s) => [s.id, s.state, s.availableAt]),
        [
            ["web-0", "cooldown", T0 + 10_000],
            ["web-1", "cooldown", T0 + 11_000],
        ],
    );
    advance(1);
    assert.equal(take(m).proxyId, "web-0");
    assert.deepEqual(refused(m).retryAfterSeconds, 1); // web-1 rested at T0+11 s, 1 s from now
});

test("a leased-out pool answers Retry-After = max(busy retry, pool cooldown)", () => {
    const { m } = setup({}, { web: { cooldownSeconds: 20 } }, ["web-0"]);
    take(m);
    assert.deepEqual(refused(m), { ok: false, reason: "none-available", retryAfterSeconds: 20 });
    const z = setup({ busyRetryAfterSeconds: 3 }, undefined, ["web-0"]);
    take(z.m);
    assert.equal(refused(z.m).retryAfterSeconds, 3);
});

test("leases expire after their TTL; the proxy serves pool cooldown from expiresAt; late release is 410-style", () => {
    const { m, advance } = setup({}, { web: { cooldownSeconds: 5 } }, ["web-0"]);
    const l = take(m, { ttlSeconds: 10 });
    assert.equal(l.expiresAt, T0 + 10_000);
    advance(9_999);
    assert.deepEqual(m.get(l.id), l);
    advance(3_000); // noticed 2.999 s late: the rest still started at expiresAt
    assert.equal(m.get(l.id), undefined);
    assert.deepEqual(m.release(l.id, "ok"), { ok: false, reason: "expired", cause: "ttl", endedAt: T0 + 10_000 });
    assert.deepEqual(refused(m), { ok: false, reason: "none-available", retryAfterSeconds: 3 });
    assert.deepEqual(m.snapshot()[0], {
        id: "web-0",
        pool: "web",
        eligible: true,
        errors: 0,
        state: "cooldown",
        lastUsedAt: T0 + 10_000,
        availableAt: T0 + 15_000,
    });
    advance(2_001);
    assert.equal(take(m).proxyId, "web-0");
});

test("sweep ends expired leases without a request; TTLs default to 300 s and are clamped to [1, 3600]", () => {
    const { m, advance } = setup();
    assert.equal(take(m).expiresAt - T0, 300_000);
    assert.equal(take(m, { ttlSeconds: 99_999 }).expiresAt - T0, 3_600_000);
    assert.equal(take(m, { ttlSeconds: 0 }).expiresAt - T0, 1_000);
    advance(1_000);
    assert.deepEqual(m.sweep(), { expired: 1, sessionsDropped: 0 });
    assert.equal(m.activeLeases, 2);
});

test("ineligible members are never leased; a lease in flight runs on; verdicts may arrive before the member", () => {
    const { m } = setup();
    m.setEligible("web-0", false);
    const a = take(m);
    assert.equal(a.proxyId, "web-1");
    assert.equal(take(m).proxyId, "web-2");
    m.setEligible("web-1", false);
    assert.equal(m.snapshot().find((s) => s.id === "web-1")!.state, "leased");
    m.release(a.id, "ok");
    assert.deepEqual(
        m.snapshot().map((s) => s.state),
        ["ineligible", "ineligible", "leased"],
    );
    assert.deepEqual(refused(m), { ok: false, reason: "none-available", retryAfterSeconds: 1 }, "web-2 may come back");
    m.setEligible("web-2", false);
    m.release(m.snapshot()[2].leaseId!, "ok");
    assert.deepEqual(
        refused(m),
        { ok: false, reason: "none-available", retryAfterSeconds: 30 },
        "nothing will come back by itself",
    );
    assert.equal(m.setEligible("web-9", true), false);
    m.setMembers(
        [
            { id: "web-0", pool: "web" },
            { id: "web-9", pool: "web" },
        ],
        { web: { cooldownSeconds: 0 } },
    );
    assert.equal(take(m).proxyId, "web-9");
    m.setEligible("web-0", true);
    assert.equal(take(m).proxyId, "web-0");
});

test("members start ineligible by default until the health engine (or setMembers) says otherwise", () => {
    const m = new LeaseManager({ now: () => T0 });
    m.setMembers(
        [
            { id: "web-0", pool: "web" },
            { id: "web-1", pool: "web", eligible: true },
        ],
        { web: { cooldownSeconds: 0 } },
    );
    const r = m.acquire();
    assert.ok(r.ok);
    assert.equal(r.lease.proxyId, "web-1");
    assert.match(r.lease.id, /^[0-9a-f-]{36}$/);
    assert.deepEqual(m.acquire(), { ok: false, reason: "none-available", retryAfterSeconds: 1 });
});

test("a member removed while leased ends its lease; empty and unknown pools answer no-members", () => {
    const { m, advance } = setup({}, { web: { cooldownSeconds: 0 }, spare: { cooldownSeconds: 0 } });
    const l = take(m);
    advance(7);
    m.setMembers([{ id: "web-1", pool: "web" }], { web: { cooldownSeconds: 0 }, spare: { cooldownSeconds: 0 } });
    assert.equal(m.activeLeases, 0);
    assert.deepEqual(m.release(l.id, "ok"), { ok: false, reason: "expired", cause: "member-removed", endedAt: T0 + 7 });
    assert.deepEqual(
        m.snapshot().map((s) => s.id),
        ["web-1"],
    );
    assert.deepEqual(refused(m, { pool: "spare" }), { ok: false, reason: "no-members", retryAfterSeconds: 30 });
    assert.deepEqual(refused(m, { pool: "nope" }), { ok: false, reason: "no-members", retryAfterSeconds: 30 });
    assert.deepEqual(m.stats(), {
        web: { members: 1, available: 1, leased: 0, cooldown: 0, ineligible: 0 },
        spare: { members: 0, available: 0, leased: 0, cooldown: 0, ineligible: 0 },
    });
    m.setMembers([], {});
    assert.deepEqual(m.stats(), {});
    assert.deepEqual(refused(m), { ok: false, reason: "no-members", retryAfterSeconds: 30 });
});

test("release: unknown and double releases are unknown-lease; error outcomes count and call onError", () => {
    const errors: string[] = [];
    const { m } = setup({ onError: (id, lease) => errors.push(`${id}:${lease.id}`) });
    assert.deepEqual(m.release("nope", "ok"), { ok: false, reason: "unknown-lease" });
    const a = take(m);
    assert.deepEqual(m.release(a.id, "error"), { ok: true, lease: a, errors: 1 });
    assert.deepEqual(m.release(a.id, "ok"), { ok: false, reason: "unknown-lease" });
    const b = take(m);
    m.release(b.id, "ok");
    const c = take(m);
    assert.equal(c.proxyId, "web-2");
    m.release(c.id, "blocked");
    m.release(take(m).id, "error"); // web-0 again: LRU
    assert.deepEqual(errors, ["web-0:L1", "web-0:L4"]);
    assert.deepEqual(
        m.snapshot().map((s) => [s.id, s.errors]),
        [
            ["web-0", 2],
            ["web-1", 0],
            ["web-2", 0],
        ],
    );
});

test("bad options fail at construction and name the option", () => {
    assert.throws(() => new LeaseManager({ defaultTtlSeconds: -1 }), {
        message: "LeaseManager option `defaultTtlSeconds` must be a finite number ≥ 0, got -1",
    });
    assert.throws(() => new LeaseManager({ maxTtlSeconds: 0 }), {
        message: "LeaseManager option `maxTtlSeconds` must be ≥ 1",
    });
    assert.doesNotThrow(() => new LeaseManager({ defaultTtlSeconds: undefined }));
});
