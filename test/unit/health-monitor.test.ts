/**
 * HealthMonitor with an injected probe: bounded concurrency, membership changes, cadence, callbacks,
 * lease errors, and a probe that throws. (Real proxies: health-probe.test.ts.)
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { HealthMonitor, ProbeOptions, ProbeResult, Transition } from "../../src/probes";
import { localMember } from "../helpers/members";
import { sleep } from "../helpers/harness";

const member = (i: number, port = 10_000 + i) => localMember(i, port);

test("a round probes every member with at most `concurrency` probes in flight", async () => {
    let inFlight = 0;
    let peak = 0;
    const seen: number[] = [];
    const probe = async (o: ProbeOptions): Promise<ProbeResult> => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        seen.push(o.proxyPort);
        await sleep(5);
        inFlight--;
        return { ok: true, latencyMs: 5 };
    };
    const mon = new HealthMonitor({ checkUrl: "http://127.0.0.1:1/v1/echo", concurrency: 8, probe });
    mon.setMembers(Array.from({ length: 100 }, (_, i) => member(i)));
    await mon.probeAll();
    assert.equal(peak, 8);
    assert.deepEqual(
        seen,
        Array.from({ length: 100 }, (_, i) => 10_000 + i),
        "each once, in member order",
    );
    assert.equal(mon.snapshot().filter((v) => v.state === "healthy").length, 100);
});

test("setMembers keeps survivors, drops the removed, adds new as unknown, resets a moved member", async () => {
    const transitions: Transition[] = [];
    const mon = new HealthMonitor({
        checkUrl: "http://127.0.0.1:1/",
        probe: async () => ({ ok: true, latencyMs: 1 }),
        now: () => 42,
        onTransition: (t) => transitions.push(t),
    });
    mon.setMembers([member(0), member(1)]);
    await mon.probeAll();
    mon.setMembers([member(1, 20_001), member(2)]);
    assert.equal(mon.get("web-0"), undefined);
    assert.equal(mon.get("web-1")!.state, "unknown");
    assert.equal(mon.get("web-2")!.state, "unknown");
    assert.deepEqual(
        transitions.map((t) => `${t.id}:${t.from}->${t.to}:${t.reason}`),
        [
            "web-0:unknown->healthy:1 consecutive successful probe (1 ms)",
            "web-1:unknown->healthy:1 consecutive successful probe (1 ms)",
            "web-1:healthy->unknown:address changed to 127.0.0.1:20001",
        ],
    );
    mon.setMembers([member(1, 20_001), member(2)]);
    assert.equal(transitions.length, 3, "same addresses: nothing happens");
});

test("a result for a member removed while its probe was in flight is discarded", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const probes: string[] = [];
    const mon = new HealthMonitor({
        checkUrl: "http://127.0.0.1:1/",
        probe: async () => (await gate, { ok: true, latencyMs: 1 }),
        onProbe: (p) => probes.push(p.id),
    });
    mon.setMembers([member(0)]);
    const round = mon.probeAll();
    mon.setMembers([]);
    mon.setMembers([member(0)]);
    release();
    await round;
    assert.deepEqual(probes, []);
    assert.equal(mon.get("web-0")!.state, "unknown");
});

test("start/stop: rounds repeat every intervalMs, new members are probed at once, stop waits", async () => {
    const calls: { id: number; at: number }[] = [];
    const t0 = Date.now();
    const mon = new HealthMonitor({
        checkUrl: "http://127.0.0.1:1/",
        intervalMs: 100,
        probe: async (o) => (calls.push({ id: o.proxyPort, at: Date.now() - t0 }), { ok: true, latencyMs: 0 }),
    });
    mon.setMembers([member(0)]);
    mon.start();
    mon.start();
    await sleep(250);
    const added = Date.now() - t0;
    mon.setMembers([member(0), member(1)]);
    await sleep(10);
    await mon.stop();
    const n = calls.length;
    await sleep(150);
    assert.equal(calls.length, n, "no probes after stop");
    // Asserted by order, not by a count of rounds in a window: a busy machine delays timers, never
    // advances them, so gaps only grow and a late sleep may let one more round in.
    const first = calls.filter((c) => c.id === 10_000).map((c) => c.at);
    assert.ok(first.length >= 2, `rounds every 100 ms: ${first}`);
    for (let i = 1; i < first.length; i++) assert.ok(first[i] - first[i - 1] >= 95, `cadence: ${first}`);
    const second = calls.filter((c) => c.id === 10_001).map((c) => c.at);
    const roundsAfter = first.filter((at) => at >= added);
    assert.ok(second.length >= 1, "the new member was probed before the stop, 10 ms after it came");
    assert.ok(
        roundsAfter.length === 0 || second[0] <= roundsAfter[0],
        `the new member was probed without waiting for the round: ${second} (rounds ${first}, added at ${added})`,
    );
    assert.equal(second.length, 1 + roundsAfter.length, "then once per round, like every member");
});

test("lease errors, probe exceptions and throwing listeners", async () => {
    const transitions: string[] = [];
    const errors: unknown[] = [];
    let fail = false;
    const mon = new HealthMonitor({
        checkUrl: "http://127.0.0.1:1/",
        probe: async () => {
            if (fail) throw new Error("boom");
            return { ok: true, latencyMs: 1 };
        },
        onTransition: (t) => transitions.push(`${t.id}:${t.to}:${t.reason}`),
        onProbe: () => {
            throw new Error("metrics bug");
        },
        onError: (e) => errors.push((e as Error).message),
    });
    mon.setMembers([member(0)]);
    await mon.probeAll();
    mon.reportLeaseError("web-0");
    mon.reportLeaseError("web-0", "crawler saw ECONNRESET");
    mon.reportLeaseError("nobody");
    fail = true;
    await mon.probeAll();
    await mon.probeAll();
    assert.deepEqual(transitions, [
        "web-0:healthy:1 consecutive successful probe (1 ms)",
        "web-0:unhealthy:2 consecutive failures; last: crawler saw ECONNRESET",
    ]);
    assert.equal(mon.get("web-0")!.lastError, "probe threw: boom");
    assert.equal(mon.get("web-0")!.leaseErrors, 2);
    assert.deepEqual(errors, ["metrics bug", "metrics bug", "metrics bug"]);
});

test("bad options fail at construction", () => {
    assert.throws(() => new HealthMonitor({ checkUrl: "/v1/echo" }), {
        message: 'HealthMonitor option `checkUrl` must be an absolute http(s) URL, got "/v1/echo"',
    });
    assert.throws(() => new HealthMonitor({ checkUrl: "http://x/", concurrency: 0 }), {
        message: "HealthMonitor option `concurrency` must be a whole number ≥ 1, got 0",
    });
    assert.throws(
        () => new HealthMonitor({ checkUrl: "http://x/", thresholds: { failureThreshold: 0 } }),
        /failureThreshold/,
    );
});
