/** The per-member health state machine: thresholds, hysteresis, lease errors, what it records. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { MemberHealth } from "../../src/probes";

const ok = (latencyMs = 12, egressIp?: string) => ({ ok: true, latencyMs, status: 200, ...(egressIp && { egressIp }) });
const bad = (error = "GET through proxy 127.0.0.1:1: ECONNREFUSED") => ({ ok: false, latencyMs: 1, error });

test("unknown → healthy after one success; → unhealthy after two failures; back after two successes", () => {
    const h = new MemberHealth("web-0", 100);
    assert.equal(h.state, "unknown");
    assert.deepEqual(h.recordProbe(ok(12, "10.0.0.5"), 200), {
        id: "web-0",
        from: "unknown",
        to: "healthy",
        reason: "1 consecutive successful probe (12 ms)",
        at: 200,
    });
    assert.equal(h.recordProbe(ok(), 300), undefined);
    assert.equal(h.recordProbe(bad(), 400), undefined, "one failure is not enough");
    assert.equal(h.state, "healthy");
    assert.deepEqual(h.recordProbe(bad("timed out after 5000 ms"), 500), {
        id: "web-0",
        from: "healthy",
        to: "unhealthy",
        reason: "2 consecutive failures; last: timed out after 5000 ms",
        at: 500,
    });
    assert.equal(h.recordProbe(bad(), 600), undefined, "already unhealthy: no repeated transition");
    assert.equal(h.recordProbe(ok(), 700), undefined, "one success does not bring it back");
    assert.deepEqual(h.recordProbe(ok(8), 800), {
        id: "web-0",
        from: "unhealthy",
        to: "healthy",
        reason: "2 consecutive successful probes (8 ms)",
        at: 800,
    });
    const v = h.snapshot();
    assert.deepEqual(v, {
        id: "web-0",
        state: "healthy",
        since: 800,
        consecutiveSuccesses: 2,
        consecutiveFailures: 0,
        lastProbeAt: 800,
        lastOkAt: 800,
        lastLatencyMs: 8,
        lastStatus: 200,
        lastError: "GET through proxy 127.0.0.1:1: ECONNREFUSED",
        egressIp: "10.0.0.5",
        leaseErrors: 0,
        transitions: [
            { from: "unknown", to: "healthy", reason: "1 consecutive successful probe (12 ms)", at: 200 },
            {
                from: "healthy",
                to: "unhealthy",
                reason: "2 consecutive failures; last: timed out after 5000 ms",
                at: 500,
            },
            { from: "unhealthy", to: "healthy", reason: "2 consecutive successful probes (8 ms)", at: 800 },
        ],
    });
});

test("a member that never comes up goes unknown → unhealthy", () => {
    const h = new MemberHealth("web-1", 0);
    assert.equal(h.recordProbe({ ok: false, latencyMs: 3, status: 502 }, 10), undefined);
    assert.deepEqual(h.recordProbe({ ok: false, latencyMs: 3, status: 502 }, 20), {
        id: "web-1",
        from: "unknown",
        to: "unhealthy",
        reason: "2 consecutive failures; last: probe failed with 502",
        at: 20,
    });
    assert.equal(h.snapshot().lastStatus, 502);
});

test("a lease error is one failure signal; a good probe in between clears it", () => {
    const h = new MemberHealth("web-0", 0);
    h.recordProbe(ok(), 1);
    assert.equal(h.reportLeaseError(2), undefined);
    h.recordProbe(ok(), 3);
    assert.equal(h.reportLeaseError(4), undefined);
    assert.deepEqual(h.reportLeaseError(5, "crawler: connection reset"), {
        id: "web-0",
        from: "healthy",
        to: "unhealthy",
        reason: "2 consecutive failures; last: crawler: connection reset",
        at: 5,
    });
    assert.equal(h.snapshot().leaseErrors, 3);
});

test("thresholds are configurable and validated; only the last 10 transitions are kept", () => {
    const h = new MemberHealth("x", 0, { initialSuccessThreshold: 3, successThreshold: 1, failureThreshold: 1 });
    h.recordProbe(ok(), 1);
    h.recordProbe(ok(), 2);
    assert.equal(h.recordProbe(ok(), 3)?.to, "healthy");
    for (let i = 0; i < 12; i++) h.recordProbe(i % 2 ? ok() : bad(), 10 + i);
    const v = h.snapshot();
    assert.equal(v.transitions.length, 10);
    assert.equal(v.transitions.at(-1)!.at, 21);
    assert.throws(
        () => new MemberHealth("x", 0, { initialSuccessThreshold: 1, successThreshold: 0, failureThreshold: 2 }),
        { message: "health threshold `successThreshold` must be a whole number ≥ 1, got 0" },
    );
});
