/** The autoscaler's rule as a pure function: signals, bounds and state in, one decision with its reasons out. */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
    type AutoscaleInput,
    type AutoscaleSignals,
    type AutoscaleState,
    decide,
    demandOf,
} from "../../src/service/control/autoscale/decide";

const NOW = 1_000_000_000;
const config = { min: 1, max: 6, targetUtilization: 0.5, scaleDownAfterSeconds: 60, cooldownSeconds: 30 };
const signals = (over: Partial<AutoscaleSignals> = {}): AutoscaleSignals => ({
    leased: 0,
    healthy: 1,
    utilization: 0,
    refusedLeases: 0,
    refusedGateway: 0,
    samples: 4,
    ...over,
});
const input = (current: number, s: Partial<AutoscaleSignals>, over: Partial<AutoscaleInput> = {}): AutoscaleInput => ({
    now: NOW,
    current,
    config,
    signals: signals(s),
    windowMs: 0,
    state: {},
    ...over,
});

test("demand is leased members plus refused requests per sample, both doors alike", () => {
    assert.equal(demandOf(signals({ leased: 1, refusedLeases: 6, refusedGateway: 2, samples: 4 })), 3);
    assert.equal(demandOf(signals({ leased: 2, samples: 0 })), 2, "no samples counts as one");
});

test("proportional: ceil(demand / target), clamped to [min, max]", () => {
    const up = decide(input(1, { leased: 1, healthy: 1, refusedLeases: 8, samples: 4 }));
    assert.equal(up.action, "scale");
    assert.equal(up.to, 6, "demand 3 at 0.5 wants 6");
    assert.equal(up.wanted, 6);
    assert.match(up.reasons[0], /demand 3 .* wants 6/);
    assert.match(up.reasons[1], /above target/);
    assert.deepEqual(up.state, { lastDecisionAt: NOW, lastTo: 6 });
    const clamped = decide(input(1, { leased: 1, refusedLeases: 400 }));
    assert.equal(clamped.to, 6, "never above max");
    assert.equal(decide(input(2, { leased: 2.5, healthy: 2 })).to, 5, "3 / 0.5 is 6, 2.5 / 0.5 is 5: no float drift");
});

test("a scale-up waits for one full window above target, then sizes by it", () => {
    let d = decide(input(1, { leased: 1, healthy: 1 }, { windowMs: 10_000 }));
    assert.equal(d.action, "hold");
    assert.match(d.reasons[1], /above target for 0s of the 10s window before scaling up/);
    assert.deepEqual(d.state, { aboveSince: NOW });
    d = decide(
        input(1, { leased: 1, healthy: 1, refusedLeases: 8 }, { windowMs: 10_000, state: d.state, now: NOW + 10_000 }),
    );
    assert.equal(d.action, "scale");
    assert.equal(d.to, 6);
    const quiet = decide(
        input(1, { leased: 0.4, healthy: 1 }, { windowMs: 10_000, state: { aboveSince: NOW - 5_000 } }),
    );
    assert.equal(quiet.action, "hold");
    assert.deepEqual(quiet.state, {}, "a break in the load starts the wait over");
});

test("hysteresis: a load within 10% of target changes nothing", () => {
    // 6 members at 0.5 carry 3; 3.2 is 107% of that: ceil says 7, the tolerance says hold.
    const big = { ...config, max: 10 };
    const d = decide(input(6, { leased: 3.2, healthy: 6 }, { config: big }));
    assert.equal(d.action, "hold");
    assert.equal(d.wanted, 7);
    assert.match(d.reasons[1], /within 10% of target \(107%\)/);
    assert.equal(decide(input(6, { leased: 3.4, healthy: 6 }, { config: big })).action, "scale", "113%: beyond it");
    const on = decide(input(6, { leased: 3, healthy: 6 }));
    assert.equal(on.action, "hold");
    assert.equal(on.reasons[1], "on target");
});

test("cooldown: no second decision within cooldownSeconds of the last", () => {
    const state: AutoscaleState = { lastDecisionAt: NOW - 10_000, lastTo: 2 };
    const d = decide(input(2, { leased: 2, healthy: 2 }, { state }));
    assert.equal(d.action, "hold");
    assert.match(d.reasons[1], /above target; cooling down for 20s/);
    const later = decide(input(2, { leased: 2, healthy: 2 }, { state, now: NOW + 20_000 }));
    assert.equal(later.action, "scale");
    assert.equal(later.to, 4);
});

test("scale-down only after scaleDownAfterSeconds below target, to the most wanted meanwhile", () => {
    let state: AutoscaleState = {};
    let d = decide(input(6, { leased: 1, healthy: 6 }, { state }));
    assert.equal(d.action, "hold");
    assert.match(d.reasons[1], /below target for 0s of 60s/);
    assert.deepEqual((state = d.state), { belowSince: NOW, belowPeak: 2 });
    d = decide(input(6, { leased: 0, healthy: 6 }, { state, now: NOW + 30_000 }));
    assert.equal(d.action, "hold");
    assert.deepEqual((state = d.state), { belowSince: NOW, belowPeak: 2 }, "a dip does not lower the peak");
    d = decide(input(6, { leased: 0, healthy: 6 }, { state, now: NOW + 60_000 }));
    assert.equal(d.action, "scale");
    assert.equal(d.to, 2, "the peak of the quiet period, not the last sample's 1");
    assert.match(d.reasons[1], /below target for 60s/);
});

test("a scale-down never goes below what the leases held right now need, whatever the window's mean", () => {
    const quiet: AutoscaleState = { belowSince: NOW - 60_000, belowPeak: 1 };
    // The window's mean is 1 leased, but 3 leases arrived in the last sample: 3 at 0.5 needs 6 members.
    let d = decide(input(6, { leased: 1, healthy: 6 }, { state: quiet, leasedNow: 3 }));
    assert.equal(d.action, "hold");
    assert.match(d.reasons[1], /3 members are leased now/);
    // With 2 leased now it may go to 4, not to the mean's 2.
    d = decide(input(6, { leased: 1, healthy: 6 }, { state: quiet, leasedNow: 2 }));
    assert.equal(d.action, "scale");
    assert.equal(d.to, 4);
});

test("the quiet period's peak counts only once the window holds nothing older than it", () => {
    // Just after 3 leases were released the window's mean still reads 2.5: not a peak of the quiet period.
    let d = decide(input(6, { leased: 2.5, healthy: 6 }, { windowMs: 2_000 }));
    assert.equal(d.action, "hold");
    assert.deepEqual(d.state, { belowSince: NOW });
    d = decide(input(6, { leased: 1, healthy: 6 }, { windowMs: 2_000, state: d.state, now: NOW + 2_000 }));
    assert.deepEqual(d.state, { belowSince: NOW, belowPeak: 2 });
    d = decide(input(6, { leased: 1, healthy: 6 }, { windowMs: 2_000, state: d.state, now: NOW + 60_000 }));
    assert.equal(d.action, "scale");
    assert.equal(d.to, 2);
});

test("a load back at target ends the quiet period: the delay starts over", () => {
    const state: AutoscaleState = { belowSince: NOW - 50_000, belowPeak: 2 };
    const back = decide(input(6, { leased: 3, healthy: 6 }, { state }));
    assert.equal(back.action, "hold");
    assert.deepEqual(back.state, {});
    const again = decide(input(6, { leased: 1, healthy: 6 }, { state: back.state, now: NOW + 20_000 }));
    assert.equal(again.action, "hold");
    assert.deepEqual(again.state, { belowSince: NOW + 20_000, belowPeak: 2 });
});

test("scale-down waits out the cooldown too", () => {
    const state: AutoscaleState = { lastDecisionAt: NOW - 5_000, belowSince: NOW - 70_000, belowPeak: 1 };
    const d = decide(input(6, { leased: 0, healthy: 6 }, { state }));
    assert.equal(d.action, "hold");
    assert.match(d.reasons[1], /below target; cooling down for 25s/);
});

test("min 0: an idle pool empties; the first refusal wakes it at once, cooldown or not", () => {
    const zero = { ...config, min: 0 };
    const empty = decide(input(1, { leased: 0, healthy: 1 }, { config: zero, state: { belowSince: NOW - 60_000 } }));
    assert.equal(empty.action, "scale");
    assert.equal(empty.to, 0);
    const wake = decide(
        input(0, { healthy: 0, refusedLeases: 1, samples: 1 }, { config: zero, state: empty.state, now: NOW + 1 }),
    );
    assert.equal(wake.action, "scale");
    assert.equal(wake.to, 2, "one refused request at target 0.5");
    assert.match(wake.reasons[1], /the pool is empty .* waking it/);
    const idle = decide(input(0, { healthy: 0 }, { config: zero }));
    assert.equal(idle.action, "hold", "no demand, no wake-up");
});

test("a wake-up that did not take is retried after the cooldown, not on every refusal", () => {
    const zero = { ...config, min: 0 };
    const state: AutoscaleState = { lastDecisionAt: NOW - 1_000, lastTo: 1 };
    const d = decide(input(0, { healthy: 0, refusedLeases: 5, samples: 1 }, { config: zero, state }));
    assert.equal(d.action, "hold");
    assert.match(d.reasons[1], /the last wake-up did not take; cooling down for 29s/);
});

test("a count outside new bounds is brought inside them, without waiting for demand", () => {
    const over = decide(input(9, { leased: 9, healthy: 9 }));
    assert.equal(over.action, "scale");
    assert.equal(over.to, 6);
    assert.match(over.reasons[1], /9 is outside the bounds \[1, 6\]/);
    const under = decide(input(0, { healthy: 0 }, { config: { ...config, min: 2 } }));
    assert.equal(under.to, 2);
});

test("a steady load gives one decision, then holds for good", () => {
    let state: AutoscaleState = {};
    let current = 1;
    const decisions: number[] = [];
    for (let t = 0; t < 600_000; t += 5_000) {
        // Three crawlers: refused while the pool is small, each holding a member once it is big enough.
        const held = Math.min(3, current);
        const d = decide(
            input(
                current,
                { leased: held, healthy: current, refusedLeases: (3 - held) * 4 },
                { state, now: NOW + t, windowMs: 10_000 },
            ),
        );
        state = d.state;
        if (d.action === "scale") {
            decisions.push(d.to);
            current = d.to;
        }
    }
    assert.deepEqual(decisions, [6]);
});
