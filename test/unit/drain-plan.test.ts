/**
 * The pure parts of draining and lifecycles: drain steps (deadlines, releases, a scale-up that keeps a
 * member, revokes), which members a scale-down or heal takes away, lifecycle and lastError rules, and
 * the lease manager's revoke (a late release learns why).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
    DrainEntry,
    healDrainTargets,
    healGoneTargets,
    scaleDownTargets,
    stepDrain,
} from "../../src/service/control/drain/plan";
import { lifecycleOf, membersMentioned } from "../../src/service/fleet/lifecycle";
import { LeaseManager } from "../../src/service/leases";

const T0 = 1_700_000_000_000;
const members = [0, 1, 2]
    .map((index) => ({ id: `web-${index}`, pool: "web", index }))
    .concat([{ id: "old-0", pool: "old", index: 0 }]);
const drain60 = () => 60_000;

test("scaleDownTargets: members at or above the count go, and members of pools no longer configured", () => {
    const t = scaleDownTargets(members, { web: 2 });
    assert.deepEqual(
        t.map((x) => x.member),
        ["web-2", "old-0"],
    );
    assert.equal(t[0].message, "member web-2 was scaled away (pool web scaled to 2)");
    assert.equal(t[1].message, "member old-0 was scaled away (pool old was removed from the config)");
    assert.ok(t.every((x) => x.reason === "scaled-down"));
    assert.deepEqual(scaleDownTargets(members, { web: 5, old: 1 }), []);
    assert.deepEqual(
        scaleDownTargets(members, { web: 0, old: 1 }).map((x) => x.member),
        ["web-0", "web-1", "web-2"],
    );
});

test("heal targets: unhealthy members drain (replaced), gone ones end at once (gone)", () => {
    const reasons = {
        "web-0": { reason: "gone" as const, detail: "no process" },
        "web-1": { reason: "unhealthy" as const, detail: "unhealthy for 9 s" },
    };
    assert.deepEqual(healDrainTargets(members, reasons), [
        { member: "web-1", pool: "web", reason: "replaced", message: "member web-1 was replaced (unhealthy for 9 s)" },
    ]);
    assert.deepEqual(healGoneTargets(members, reasons), [
        {
            member: "web-0",
            pool: "web",
            reason: "gone",
            message: "member web-0 was gone (no process) and is being replaced",
        },
    ]);
});

test("stepDrain: idle members are done at once; a leased one waits until released or its deadline, then is revoked", () => {
    const targets = scaleDownTargets(members.slice(0, 3), { web: 1 });
    const leased = new Set(["web-2"]);
    let s = stepDrain([], targets, (id) => leased.has(id), T0, drain60);
    assert.deepEqual(
        s.entries.map((e) => [e.member, e.state, e.until]),
        [
            ["web-1", "idle", T0 + 60_000],
            ["web-2", "waiting", T0 + 60_000],
        ],
    );
    assert.equal(s.done, false);
    assert.deepEqual(s.revoke, []);
    // Later steps keep the deadline the member got when it started draining.
    s = stepDrain(s.entries, targets, (id) => leased.has(id), T0 + 30_000, drain60);
    assert.equal(s.entries[1].until, T0 + 60_000);
    assert.equal(s.done, false);
    // Released before the deadline: done.
    const released = stepDrain(s.entries, targets, () => false, T0 + 31_000, drain60);
    assert.equal(released.done, true);
    assert.deepEqual(released.revoke, []);
    assert.deepEqual(
        released.entries.map((e) => e.state),
        ["idle", "idle"],
    );
    // Never released: at the deadline its lease is to be ended, and it reads timed-out from then on.
    const due = stepDrain(s.entries, targets, (id) => leased.has(id), T0 + 60_000, drain60);
    assert.deepEqual(
        due.revoke.map((e) => e.member),
        ["web-2"],
    );
    assert.equal(due.done, true);
    const after = stepDrain(due.entries, targets, () => false, T0 + 60_100, drain60);
    assert.deepEqual(
        after.entries.map((e) => e.state),
        ["idle", "timed-out"],
    );
});

test("stepDrain: a scale-up folded in keeps members (kept, reported once); draining again starts a new deadline", () => {
    const leased = () => true;
    const first = stepDrain([], scaleDownTargets(members.slice(0, 3), { web: 1 }), leased, T0, drain60);
    const up = stepDrain(first.entries, scaleDownTargets(members.slice(0, 3), { web: 2 }), leased, T0 + 1000, drain60);
    assert.deepEqual(
        up.kept.map((e) => e.member),
        ["web-1"],
    );
    assert.deepEqual(
        up.entries.map((e) => [e.member, e.state]),
        [
            ["web-2", "waiting"],
            ["web-1", "kept"],
        ],
    );
    const again = stepDrain(up.entries, scaleDownTargets(members.slice(0, 3), { web: 2 }), leased, T0 + 2000, drain60);
    assert.deepEqual(again.kept, [], "kept is reported once");
    const down = stepDrain(
        again.entries,
        scaleDownTargets(members.slice(0, 3), { web: 1 }),
        leased,
        T0 + 5000,
        drain60,
    );
    assert.equal(down.entries.find((e: DrainEntry) => e.member === "web-1")!.until, T0 + 65_000);
    const none = stepDrain(first.entries, [], leased, T0 + 1000, drain60);
    assert.equal(none.done, true, "nothing left to drain: done");
});

test("stepDrain: drainSeconds 0 ends a lease at once", () => {
    const s = stepDrain(
        [],
        scaleDownTargets(members.slice(0, 3), { web: 2 }),
        () => true,
        T0,
        () => 0,
    );
    assert.deepEqual(
        s.revoke.map((e) => e.member),
        ["web-2"],
    );
    assert.equal(s.done, true);
});

test("lifecycleOf: draining wins; healthy is ready; unhealthy is failed; no verdict is provisioning unless an operation failed on it", () => {
    assert.deepEqual(lifecycleOf({ hasAddress: true, draining: true, health: "healthy" }), { lifecycle: "draining" });
    assert.deepEqual(lifecycleOf({ hasAddress: true, draining: false, health: "healthy" }), { lifecycle: "ready" });
    assert.deepEqual(lifecycleOf({ hasAddress: false, draining: false, health: "unknown" }), {
        lifecycle: "provisioning",
    });
    assert.deepEqual(lifecycleOf({ hasAddress: true, draining: false, health: "unknown" }), {
        lifecycle: "provisioning",
    });
    assert.deepEqual(
        lifecycleOf({
            hasAddress: true,
            draining: false,
            health: "unhealthy",
            probe: { lastError: "connect ECONNREFUSED", consecutiveFailures: 2, lastProbeAt: T0 },
        }),
        { lifecycle: "failed", lastError: "connect ECONNREFUSED" },
    );
    assert.deepEqual(
        lifecycleOf({
            hasAddress: false,
            draining: false,
            health: "unknown",
            opError: { message: "create web-3 failed", at: T0 },
        }),
        { lifecycle: "failed", lastError: "create web-3 failed" },
    );
});

test("lifecycleOf: lastError is the newer of a current probe failure and an operation error; a recovered probe or a later good probe clears them", () => {
    const probe = { lastError: "timeout", consecutiveFailures: 1, lastProbeAt: T0 + 10, lastOkAt: T0 };
    assert.equal(
        lifecycleOf({
            hasAddress: true,
            draining: false,
            health: "healthy",
            probe,
            opError: { message: "heal failed", at: T0 + 5 },
        }).lastError,
        "timeout",
    );
    assert.equal(
        lifecycleOf({
            hasAddress: true,
            draining: false,
            health: "healthy",
            probe,
            opError: { message: "heal failed", at: T0 + 20 },
        }).lastError,
        "heal failed",
    );
    // lastError outlives recovery in the monitor: it counts only while probes fail.
    assert.deepEqual(
        lifecycleOf({
            hasAddress: true,
            draining: false,
            health: "healthy",
            probe: { lastError: "timeout", consecutiveFailures: 0, lastOkAt: T0 },
        }),
        { lifecycle: "ready" },
    );
    // An operation error older than the last good probe is history.
    assert.deepEqual(
        lifecycleOf({
            hasAddress: true,
            draining: false,
            health: "unknown",
            probe: { consecutiveFailures: 0, lastOkAt: T0 + 50 },
            opError: { message: "x", at: T0 },
        }),
        { lifecycle: "provisioning" },
    );
});

test("membersMentioned: ids inside resource and process names count, longer ids do not", () => {
    const ids = ["web-1", "web-10", "web-2", "b-1"];
    assert.deepEqual(membersMentioned("local proxy svc-web-1 did not start listening on port 4000", ids), ["web-1"]);
    assert.deepEqual(membersMentioned("web-10-process: create failed", ids), ["web-10"]);
    assert.deepEqual(membersMentioned("updating urn:…::web-2-process failed; also web-1", ids), ["web-1", "web-2"]);
    assert.deepEqual(membersMentioned("nothing here: web-100, sub-1", ids), []);
});

test("LeaseManager.revoke: the lease ends now, a late release learns why; the member is leasable again once eligible", () => {
    let t = T0;
    let n = 0;
    const m = new LeaseManager({ now: () => t, newLeaseId: () => `L${++n}`, initiallyEligible: true });
    m.setMembers([{ id: "web-0", pool: "web" }], { web: { cooldownSeconds: 0 } });
    const r = m.acquire();
    assert.ok(r.ok);
    assert.equal(
        m.revoke("web-1", { reason: "gone", member: "web-1", message: "x" }),
        undefined,
        "unknown member: nothing to revoke",
    );
    t += 5;
    const removal = {
        reason: "scaled-down" as const,
        member: "web-0",
        message: "member web-0 was scaled away (pool web scaled to 0)",
    };
    assert.equal(m.revoke("web-0", removal)?.id, r.lease.id);
    assert.equal(m.isLeased("web-0"), false);
    assert.equal(m.revoke("web-0", removal), undefined, "nothing left to revoke");
    assert.deepEqual(m.release(r.lease.id, "ok"), {
        ok: false,
        reason: "expired",
        cause: "member-removed",
        endedAt: T0 + 5,
        removal,
    });
    const again = m.acquire();
    assert.ok(again.ok && again.lease.proxyId === "web-0", "still eligible: leasable again");
});
