/**
 * Rotation by blocks as pure functions and its counters: a member trips at `ratio` with at least
 * `minOutcomes` outcomes in the window, outcomes age out of the window, more than half of a pool tripping
 * at once is a pool-wide block (nobody replaced), and blocked members go before those due by age.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { blockDetail, judgeBlocks, trips } from "../../src/service/control/rotate/blocks";
import { decideRotations, type RotateMemberFacts } from "../../src/service/control/rotate/decide";
import { MAX_OUTCOMES_PER_MEMBER, OutcomeWindow } from "../../src/service/control/rotate/outcome-window";
import { IpMemory, MAX_IPS_PER_POOL } from "../../src/service/control/rotate/ip-memory";

const NOW = 1_000_000_000_000;
const policy = { ratio: 0.5, minOutcomes: 10, windowSeconds: 300 };
const facts = (i: number, over: Partial<RotateMemberFacts> = {}): RotateMemberFacts => ({
    id: `web-${i}`,
    pool: "web",
    index: i,
    createdAt: NOW - 60_000,
    health: "healthy",
    ...over,
});

test("a member trips at the ratio (inclusive) with at least minOutcomes outcomes, and the detail says so", () => {
    assert.equal(trips({ blocked: 5, total: 10 }, policy), true, "0.5 of 10 reaches 0.5");
    assert.equal(trips({ blocked: 4, total: 10 }, policy), false, "below the ratio");
    assert.equal(trips({ blocked: 9, total: 9 }, policy), false, "fewer than minOutcomes: no signal yet");
    assert.equal(
        trips({ blocked: 3, total: 3 }, { ...policy, ratio: 1, minOutcomes: 3 }),
        true,
        "ratio 1: all blocked",
    );
    assert.equal(trips({ blocked: 0, total: 0 }, { ...policy, minOutcomes: 1 }), false);
    assert.equal(
        blockDetail({ blocked: 7, total: 10 }, policy),
        "7 of 10 outcomes blocked in the last 300 s (ratio 0.5)",
    );
});

test("outcomes age out of the window; a reset forgets a replaced member; each member keeps at most its latest outcomes", () => {
    let now = NOW;
    const w = new OutcomeWindow(300_000, () => now);
    for (let i = 0; i < 6; i++) w.record("web-0", "blocked");
    now += 200_000;
    for (let i = 0; i < 4; i++) w.record("web-0", "ok");
    w.record("web-0", "error");
    assert.deepEqual(w.counts("web-0", 300), { blocked: 6, total: 11 });
    assert.deepEqual(w.counts("web-0", 100), { blocked: 0, total: 5 }, "a shorter window sees only the latest");
    now += 150_000; // the six blocks are 350 s old now
    assert.deepEqual(w.counts("web-0", 300), { blocked: 0, total: 5 });
    w.prune(new Set(["web-0"]));
    now += 1000;
    assert.deepEqual(w.counts("web-0", 3600), { blocked: 0, total: 5 }, "pruned past the longest window kept");
    w.prune(new Set());
    assert.deepEqual(w.counts("web-0", 300), { blocked: 0, total: 0 }, "a member gone from the fleet is forgotten");
    w.record("web-1", "blocked");
    w.reset("web-1");
    assert.deepEqual(w.counts("web-1", 300), { blocked: 0, total: 0 });
    for (let i = 0; i < MAX_OUTCOMES_PER_MEMBER + 10; i++) w.record("web-2", i < 10 ? "blocked" : "ok");
    assert.deepEqual(w.counts("web-2", 300), { blocked: 0, total: MAX_OUTCOMES_PER_MEMBER }, "bounded");
    const off = new OutcomeWindow(0, () => now);
    off.record("web-0", "blocked");
    assert.deepEqual(off.counts("web-0", 300), { blocked: 0, total: 0 }, "no pool rotates by blocks: nothing kept");
});

test("more than half of the pool tripping at once is a pool-wide block: nobody is replaced", () => {
    const counts = new Map([
        ["web-0", { blocked: 10, total: 10 }],
        ["web-1", { blocked: 8, total: 10 }],
        ["web-2", { blocked: 1, total: 10 }],
    ]);
    const ids = [...counts.keys()];
    const wide = judgeBlocks(ids, 3, (id) => counts.get(id)!, policy);
    assert.deepEqual(wide.tripped, []);
    assert.deepEqual(wide.poolWideBlock?.members, ["web-0", "web-1"]);
    assert.match(wide.poolWideBlock!.detail, /^2 of 3 members tripped rotateOnBlocks at once \(more than half\)/);
    // Exactly half is not more than half: of 4 members, 2 tripped are replaced, most blocked first.
    counts.set("web-3", { blocked: 0, total: 10 });
    const half = judgeBlocks([...counts.keys()], 4, (id) => counts.get(id)!, policy);
    assert.equal(half.poolWideBlock, undefined);
    assert.deepEqual(
        half.tripped.map((t) => [t.member, t.detail]),
        [
            ["web-0", "10 of 10 outcomes blocked in the last 300 s (ratio 0.5)"],
            ["web-1", "8 of 10 outcomes blocked in the last 300 s (ratio 0.5)"],
        ],
    );
});

test("decideRotations: a tripped member rotates with reason blocked, before members due by age, at most maxSurge", () => {
    const counts: Record<string, { blocked: number; total: number }> = { "web-2": { blocked: 7, total: 10 } };
    const members = [facts(0, { createdAt: NOW - 10 * 3_600_000 }), facts(1), facts(2)];
    const [plan] = decideRotations({
        now: NOW,
        members,
        pools: { web: { rotateAfterSeconds: 3600, rotateOnBlocks: policy, maxSurge: 1, replicas: 3, maxReplicas: 6 } },
        outcomes: (id, windowSeconds) => {
            assert.equal(windowSeconds, 300, "asked for the pool's window");
            return counts[id] ?? { blocked: 0, total: 0 };
        },
    });
    assert.deepEqual(plan.rotate, [
        {
            member: "web-2",
            reason: "blocked",
            createdAt: NOW - 60_000,
            detail: "7 of 10 outcomes blocked in the last 300 s (ratio 0.5)",
        },
    ]);
    const [both] = decideRotations({
        now: NOW,
        members,
        pools: { web: { rotateAfterSeconds: 3600, rotateOnBlocks: policy, maxSurge: 2, replicas: 3, maxReplicas: 6 } },
        outcomes: (id) => counts[id] ?? { blocked: 0, total: 0 },
    });
    assert.deepEqual(
        both.rotate.map((d) => [d.member, d.reason]),
        [
            ["web-2", "blocked"],
            ["web-0", "age"],
        ],
    );
});

test("decideRotations: a pool-wide block replaces nobody and is reported; an unhealthy member holds a blocked rotation too", () => {
    const pools = { web: { rotateOnBlocks: policy, maxSurge: 1, replicas: 3, maxReplicas: 6 } };
    const all = () => ({ blocked: 10, total: 10 });
    const [wide] = decideRotations({ now: NOW, members: [0, 1, 2].map((i) => facts(i)), pools, outcomes: all });
    assert.deepEqual(wide.rotate, []);
    assert.deepEqual(wide.poolWideBlock?.members, ["web-0", "web-1", "web-2"]);
    assert.equal(wide.nextDueAt, undefined, "no rotation by age: no deadline");
    const one = (id: string) => (id === "web-1" ? { blocked: 10, total: 10 } : { blocked: 0, total: 10 });
    const [held] = decideRotations({
        now: NOW,
        members: [facts(0, { health: "unhealthy" }), facts(1), facts(2, { createdAt: undefined })],
        pools,
        outcomes: one,
    });
    assert.deepEqual(held.rotate, []);
    assert.equal(held.holding, "web-0 is not healthy; rotation waits so capacity never drops below 3");
    const [unknownAge] = decideRotations({
        now: NOW,
        members: [facts(0), facts(1, { createdAt: undefined }), facts(2)],
        pools,
        outcomes: one,
    });
    assert.deepEqual(
        unknownAge.rotate.map((d) => [d.member, d.reason, d.createdAt]),
        [["web-1", "blocked", undefined]],
        "an unknown age does not hold a rotation by blocks",
    );
});

test("IpMemory: an IP the pool had within the memory is reused; 0 = off; bounded per pool; pruned with the pool", () => {
    let now = NOW;
    const m = new IpMemory(() => now);
    m.seen("web", "203.0.113.1");
    now += 1000 * 1000;
    assert.equal(m.usedWithin("web", "203.0.113.1", 3600), true);
    assert.equal(m.usedWithin("web", "203.0.113.1", 600), false, "seen 1000 s ago, memory 600 s");
    assert.equal(m.usedWithin("web", "203.0.113.1", 0), false, "0 = off");
    assert.equal(m.usedWithin("other", "203.0.113.1", 3600), false, "per pool");
    assert.equal(m.usedWithin("web", undefined, 3600), false, "no IP seen: not reused");
    for (let i = 0; i < MAX_IPS_PER_POOL; i++) m.seen("web", `198.51.100.${i}`);
    assert.equal(m.usedWithin("web", "203.0.113.1", 3600), false, "the oldest sighting went first");
    assert.equal(m.usedWithin("web", "198.51.100.5", 3600), true);
    m.prune(new Map([["web", 3600]]));
    assert.equal(m.usedWithin("web", "198.51.100.5", 3600), true);
    m.prune(new Map());
    assert.equal(m.usedWithin("web", "198.51.100.5", 3600), false, "a pool no longer rotating is forgotten");
});
