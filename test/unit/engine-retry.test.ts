/**
 * The retry of an operation's engine runs (src/fleet-ops/engine-retry.ts), with scripted runs: which
 * failures are retried (backend unreachable, stack locked) and which are not, the back-off and its bound,
 * the retries shown as the operation's events and logged at warn once, and an abort (a replica that lost
 * the stack's lock, a stop) ending the wait. The real engine and a real PostgreSQL restart:
 * test/service/postgres-restart.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import pino from "pino";
import { ConcurrentUpdateError } from "@pulumi/pulumi/automation";
import { BackendUnreachableError, EngineError, type ProgressEvent, type StackDriver } from "../../src/engine";
import { classifyBackendError } from "../../src/engine/engine-errors";
import {
    engineRetry,
    nextWait,
    RETRY_POLICY,
    RetryInterrupted,
    type RetryPolicy,
    transientCause,
} from "../../src/fleet-ops/engine-retry";
import { OperationLog } from "../../src/state/operations/journal";
import { scalerProject, scriptedDriver, testScaler } from "../helpers/scaler";

const PG = { kind: "postgres", shown: "postgres://egress:***@127.0.0.1:5432/egress" };
/** The CLI's words when PostgreSQL restarts under an update (the chaos run's failure, issue 35). */
const REFUSED = Object.assign(
    new Error(
        "code: 255\n stdout: \n stderr: error: could not list bucket: blob (code=Unknown): dial tcp 127.0.0.1:5432: connect: connection refused\n",
    ),
    {
        stderr: "error: could not list bucket: blob (code=Unknown): dial tcp 127.0.0.1:5432: connect: connection refused\n",
    },
);
/** As the driver makes it (driver.ts engineError). */
const down = () => {
    const cause = classifyBackendError(REFUSED, PG) as Error;
    return new EngineError("up", cause.message, cause);
};
const locked = () => new EngineError("up", "locked", new ConcurrentUpdateError(new Error("locked") as any));
const FAST: RetryPolicy = { backend: { firstMs: 5, maxMs: 20, totalMs: 60 }, lockMs: [5, 5] };

/** A logger whose lines the test reads. */
function capture() {
    const lines: Record<string, any>[] = [];
    const sink = new Writable({
        write(chunk, _enc, done) {
            lines.push(JSON.parse(String(chunk)));
            done();
        },
    });
    return { log: pino({ level: "debug" }, sink), lines };
}

/** A run that fails with each of `errors` in turn, then answers "done". */
function scripted(errors: (() => Error)[]) {
    const runs = { count: 0 };
    const run = async () => {
        const e = errors[runs.count++];
        if (e) throw e();
        return "done";
    };
    return { run, runs };
}

test("the back-off: 0.5 s doubling, at most 8 s a wait, up to 30 s of waiting per run", () => {
    const waits: number[] = [];
    let waited = 0;
    for (let attempt = 0; ; attempt++) {
        const ms = nextWait("backend", attempt, waited);
        if (ms === undefined) break;
        waits.push(ms);
        waited += ms;
    }
    assert.deepEqual(waits, [500, 1000, 2000, 4000, 8000, 8000]);
    assert.ok(waited <= RETRY_POLICY.backend.totalMs);
    assert.deepEqual(
        [0, 1, 2, 3, 4, 5].map((a) => nextWait("lock", a, 0)),
        [2000, 5000, 10000, 20000, 30000, undefined],
        "a held stack lock keeps its own waits",
    );
});

test("what is retried: a backend that did not answer and a held lock; not a failed update, a cancel or a wrong password", () => {
    const unreachable = classifyBackendError(REFUSED, PG);
    assert.ok(unreachable instanceof BackendUnreachableError, String(unreachable));
    assert.equal(
        unreachable.message,
        "the Pulumi backend postgres://egress:***@127.0.0.1:5432/egress cannot be reached (could not list bucket: blob (code=Unknown): dial tcp 127.0.0.1:5432: connect: connection refused); the operation can be retried once it answers",
        "the line that says what did not answer",
    );
    const texts = [
        "error: failed to ping PostgreSQL: dial tcp 127.0.0.1:5432: connect: connection refused",
        'error: reading stack: blob (key "postgres/.pulumi/stacks/egress/s.json") (code=Unknown): driver: bad connection',
        "error: could not list bucket: blob (code=Unknown): pq: the database system is starting up",
    ];
    const ownQuery = new Error("PostgreSQL: connect ECONNREFUSED 127.0.0.1:5432"); // postgres-state.ts, recovery's lock-row read
    assert.ok(classifyBackendError(ownQuery, PG) instanceof BackendUnreachableError, ownQuery.message);
    const provider = new Error("ssh root@10.0.0.2: connect ECONNREFUSED 10.0.0.2:22");
    assert.equal(classifyBackendError(provider, PG), provider, "a provider's host refusing is not the backend");
    for (const stderr of texts)
        assert.ok(
            classifyBackendError(Object.assign(new Error("x"), { stderr }), PG) instanceof BackendUnreachableError,
            stderr,
        );
    assert.equal(transientCause(unreachable), "backend", "a read of state (export) that met the outage");
    assert.equal(transientCause(down()), "backend", "an engine run that met it");
    assert.equal(transientCause(locked()), "lock");
    assert.equal(transientCause(new EngineError("up", "squid failed to start", new Error("exit 1"))), undefined);
    assert.equal(
        transientCause(new EngineError("up", "cancelled on request", REFUSED, true)),
        undefined,
        "an interrupted run is never re-run",
    );
    const password = Object.assign(new Error("x"), {
        stderr: "error: unable to open bucket postgres://u:p@h/db: failed to ping PostgreSQL: pq: password authentication failed",
    });
    assert.equal(transientCause(classifyBackendError(password, PG)), undefined, "a wrong password is no outage");
    const fileBackend = classifyBackendError(REFUSED, { kind: "file", shown: "file:///x" });
    assert.equal(transientCause(fileBackend), undefined, "a file backend is never unreachable");
    assert.equal(transientCause(new Error("boom")), undefined);
});

test("a run that meets the backend down is run again after each wait, the retries shown as events and warned once", async () => {
    const { log, lines } = capture();
    const events: ProgressEvent[] = [];
    const retry = engineRetry(log, { policy: FAST, progress: (e) => events.push(e) });
    const first = scripted([down, down, down]);
    assert.equal(await retry(first.run), "done");
    assert.equal(first.runs.count, 4);
    assert.deepEqual(
        events.map((e) => [e.kind, e.severity, e.message?.replace(/\): .*/s, ")")]),
        [
            ["diagnostic", "warning", "backend unreachable, retrying in 5 ms (attempt 1)"],
            ["diagnostic", "warning", "backend unreachable, retrying in 10 ms (attempt 2)"],
            ["diagnostic", "warning", "backend unreachable, retrying in 20 ms (attempt 3)"],
        ],
    );
    assert.match(
        events[0].message!,
        /the Pulumi backend postgres:\/\/egress:\*\*\*@127\.0\.0\.1:5432\/egress cannot be reached/,
    );
    // A later run of the same operation (a rolling change has several) warns no more.
    const second = scripted([locked]);
    assert.equal(await retry(second.run), "done");
    assert.match(events[3].message!, /^stack locked by another update, retrying in 5 ms \(attempt 1\)/);
    const warns = lines.filter((l) => l.level === 40);
    assert.deepEqual(
        warns.map((l) => [l.msg, l.attempt, l.waitMs]),
        [["the Pulumi backend is unreachable; retrying", 1, 5]],
        "one warning for the operation",
    );
    assert.equal(lines.filter((l) => l.level === 20 && /retrying/.test(l.msg)).length, 3, "the others at debug");
    assert.deepEqual(
        lines.filter((l) => l.msg === "the engine run succeeded after retries").map((l) => l.retries),
        [3, 1],
    );
});

test("the waits are bounded: past the policy's total the run's last error stands", async () => {
    const { log } = capture();
    const events: ProgressEvent[] = [];
    const always = scripted(Array.from({ length: 100 }, () => down));
    const started = Date.now();
    await assert.rejects(engineRetry(log, { policy: FAST, progress: (e) => events.push(e) })(always.run), (e) => {
        assert.ok(e instanceof EngineError && e.backendUnreachable, String(e));
        return true;
    });
    // 5 + 10 + 20 + 20 = 55 ms of waits fit in 60; a fifth wait would not.
    assert.equal(always.runs.count, 5);
    assert.equal(events.length, 4);
    assert.ok(Date.now() - started < 5_000);
    const held = scripted(Array.from({ length: 100 }, () => locked));
    await assert.rejects(engineRetry(log, { policy: FAST })(held.run), /locked/);
    assert.equal(held.runs.count, 3, "a held lock: one run per wait of lockMs, and the first");
});

test("a failure that is not transient is thrown at once, never re-run", async () => {
    const { log, lines } = capture();
    const once = scripted([() => new EngineError("up", "squid failed to start", new Error("exit 1"))]);
    await assert.rejects(engineRetry(log, { policy: FAST })(once.run), /squid failed to start/);
    assert.equal(once.runs.count, 1);
    assert.deepEqual(lines, []);
});

test("an abort ends the wait: the run is not made again and the error says it was interrupted", async () => {
    const { log } = capture();
    const controller = new AbortController();
    const slow: RetryPolicy = { backend: { firstMs: 60_000, maxMs: 60_000, totalMs: 600_000 }, lockMs: [] };
    const again = scripted([down, down]);
    const started = Date.now();
    const retried = engineRetry(log, { policy: slow, signal: controller.signal })(again.run);
    setTimeout(() => controller.abort(new Error("this replica lost the stack's lock")), 50);
    await assert.rejects(retried, (e) => {
        assert.ok(e instanceof RetryInterrupted);
        assert.equal(e.interrupted, true);
        assert.match(e.message, /^this replica lost the stack's lock while the engine run waited to be retried \(/);
        return true;
    });
    assert.equal(again.runs.count, 1);
    assert.ok(Date.now() - started < 5_000, "the 60 s wait was cut short");
    // Aborted already when a run fails: no wait, the run's own error.
    const late = scripted([down]);
    await assert.rejects(engineRetry(log, { signal: controller.signal })(late.run), /cannot be reached/);
    assert.equal(late.runs.count, 1);
});

test("a scale whose `up` meets the backend down is retried and succeeds, the retry in its events", async () => {
    const { driver, calls } = scriptedDriver();
    const ops = new OperationLog();
    const scaler = testScaler(driver, scalerProject(), { ops });
    scaler.open();
    const op = scaler.request("web", 3);
    while (!calls.length) await new Promise((r) => setTimeout(r, 10));
    calls[0].reject(down());
    while (calls.length < 2) await new Promise((r) => setTimeout(r, 10));
    assert.equal(op.status, "running");
    calls[1].resolve();
    await scaler.drain();
    assert.equal(op.status, "succeeded", op.error);
    assert.deepEqual(
        ops.eventsOf(op.id).map((e) => e.message?.replace(/\): .*/s, ")")),
        ["backend unreachable, retrying in 500 ms (attempt 1)"],
    );
});

test("a replica that loses the stack's lock while a retry waits stops retrying: interrupted, no further run", async () => {
    const { driver, calls } = scriptedDriver();
    const refused: (Error | undefined)[] = [];
    Object.assign(driver, {
        refuseRuns: (why: Error | undefined) => refused.push(why),
        abandon: (why: Error) => {
            refused.push(why);
            return { engineRunning: false, disarm: () => undefined };
        },
    } satisfies Partial<StackDriver>);
    const scaler = testScaler(driver, scalerProject());
    scaler.open();
    const op = scaler.request("web", 3);
    while (!calls.length) await new Promise((r) => setTimeout(r, 10));
    calls[0].reject(down());
    await new Promise((r) => setTimeout(r, 100)); // inside the first wait (500 ms)
    scaler.abandonRunning("this replica lost the stack's lock", 5_000);
    await scaler.drain();
    assert.equal(op.status, "interrupted");
    assert.match(op.error!, /^this replica lost the stack's lock while the engine run waited to be retried/);
    await new Promise((r) => setTimeout(r, 700));
    assert.equal(calls.length, 1, "no engine run after the lock was lost");
    assert.deepEqual(
        refused.map((r) => r?.message),
        ["this replica lost the stack's lock", undefined],
        "runs refused until the operation ended",
    );
});
