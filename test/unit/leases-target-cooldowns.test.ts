/**
 * LeaseManager's per-target cooldowns with a fake clock and predictable lease ids
 * (test/helpers/lease-manager.ts): a member rests for the target it was used for, blocks escalate the
 * rest and are forgotten when quiet, and Retry-After counts them in. The rest of its semantics:
 * leases.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { LeaseManager } from "../../src/service/leases";
import { refused, setup, T0, take } from "../helpers/lease-manager";

test("by default an ok or error release rests nothing for the target; a block still does", () => {
    const clock = { t: T0 };
    const m = new LeaseManager({ now: () => clock.t, initiallyEligible: true });
    m.setMembers([{ id: "web-0", pool: "web" }], { web: { cooldownSeconds: 0 } });
    for (const outcome of ["ok", "error"] as const) {
        const l = m.acquire({ target: "shop.example" });
        assert.ok(l.ok);
        m.release(l.lease.id, outcome);
        assert.equal(m.targetCooldownUntil("shop.example", "web-0"), 0, `no rest after ${outcome}`);
    }
    const b = m.acquire({ target: "shop.example" });
    assert.ok(b.ok, "the same member again at once");
    m.release(b.lease.id, "blocked");
    assert.equal(m.targetCooldownUntil("shop.example", "web-0"), T0 + 60_000, "60 s after a block");
});

test("per-target cooldown: a proxy used for a target rests for that target only", () => {
    const { m, advance } = setup({}, undefined, ["web-0", "web-1"]);
    const a = take(m, { target: "shop.example" });
    assert.equal(a.target, "shop.example");
    m.release(a.id, "ok");
    advance(1);
    m.release(take(m).id, "ok"); // web-1, no target
    // LRU head is web-0, but it rests for shop.example until T0+30 s.
    const b = take(m, { target: "shop.example" });
    assert.equal(b.proxyId, "web-1");
    assert.equal(m.targetCooldownUntil("shop.example", "web-0"), T0 + 30_000);
    advance(4_999);
    m.release(b.id, "ok"); // web-1 rests for shop.example until T0+35 s
    assert.deepEqual(refused(m, { target: "shop.example" }), {
        ok: false,
        reason: "none-available",
        retryAfterSeconds: 25,
    });
    const news = take(m, { target: "news.example" });
    assert.equal(news.proxyId, "web-0");
    advance(25_000);
    // web-1 rests 5 s more for shop.example, but leased web-0 (rested for it since T0+30 s) may come back now.
    assert.deepEqual(refused(m, { target: "shop.example" }).retryAfterSeconds, 1);
    m.release(news.id, "ok");
    assert.equal(take(m, { target: "shop.example" }).proxyId, "web-0");
    assert.equal(take(m, { target: "news.example" }).proxyId, "web-1", "web-1 never visited news.example");
});

test("per-target Retry-After also accounts for members still in pool cooldown", () => {
    const { m, advance } = setup({}, { web: { cooldownSeconds: 60 } }, ["web-0"]);
    m.release(take(m, { target: "t" }).id, "ok"); // pool rest until T0+60 s, target rest until T0+30 s
    assert.equal(refused(m, { target: "t" }).retryAfterSeconds, 60);
    advance(1000);
    m.setMembers([{ id: "web-0", pool: "web" }], { web: { cooldownSeconds: 10 } });
    assert.equal(refused(m, { target: "t" }).retryAfterSeconds, 29); // now the target rest is the longer one
    assert.equal(refused(m).retryAfterSeconds, 9);
});

test("blocked doubles the target cooldown from 60 s up to 3600 s; ok resets it, error does not", () => {
    const { m, clock } = setup({}, undefined, ["web-0"]);
    const seen: number[] = [];
    const block = () => {
        const l = take(m, { target: "t" });
        assert.equal(m.release(l.id, "blocked").ok, true);
        const rest = (m.targetCooldownUntil("t", "web-0") - clock.t) / 1000;
        assert.equal(refused(m, { target: "t" }).retryAfterSeconds, rest);
        assert.equal(take(m, { target: "other" }).proxyId, "web-0", "other targets are not affected");
        m.release(m.snapshot()[0].leaseId!, "ok");
        clock.t = m.targetCooldownUntil("t", "web-0");
        seen.push(rest);
    };
    for (let i = 0; i < 8; i++) block();
    assert.deepEqual(seen, [60, 120, 240, 480, 960, 1920, 3600, 3600]);
    m.release(take(m, { target: "t" }).id, "error"); // error: plain 30 s rest, escalation kept
    clock.t += 30_000;
    block();
    assert.equal(seen.at(-1), 3600);
    m.release(take(m, { target: "t" }).id, "ok");
    clock.t += 30_000;
    block();
    assert.equal(seen.at(-1), 60);
});

test("a block count is forgotten once it has been quiet for blockedMaxSeconds (sweep)", () => {
    const { m, clock } = setup({ blockedBaseSeconds: 10, blockedMaxSeconds: 100 }, undefined, ["web-0"]);
    m.release(take(m, { target: "t" }).id, "blocked");
    clock.t += 10_000;
    m.release(take(m, { target: "t" }).id, "blocked"); // 20 s
    clock.t += 20_000 + 99_999;
    m.sweep();
    m.release(take(m, { target: "t" }).id, "blocked");
    assert.equal(m.targetCooldownUntil("t", "web-0") - clock.t, 40_000, "still remembered");
    clock.t += 40_000 + 100_000;
    m.sweep();
    assert.equal(m.targetCooldownUntil("t", "web-0"), 0);
    m.release(take(m, { target: "t" }).id, "blocked");
    assert.equal(m.targetCooldownUntil("t", "web-0") - clock.t, 10_000, "back to the base");
});
