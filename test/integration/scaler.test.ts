/**
 * Scaler coordination with a scripted driver (the real engine runs in test/service): gating before
 * recovery and during shutdown, folding of queued requests, queued scale requests kept on drain and
 * carried over by the next start (OperationLog.recover, Scaler.carry), also when cut off while waiting
 * for the writer lock, and retry while another update holds the stack lock.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { ConcurrentUpdateError } from "@pulumi/pulumi/automation";
import { acquireWriterLock, EngineError, LockHolder } from "../../src/engine";
import { NotAcceptingError } from "../../src/service/control/scaler";
import { OperationLog } from "../../src/state/operations/journal";
import { holdWriterLock, killHard } from "../helpers/cli";
import { scalerProject, scalerTempDir, scriptedDriver, testScaler } from "../helpers/scaler";

const tick = () => new Promise((r) => setImmediate(r));

/**
 * The service's writer lock on stack `s` (as start/parts.ts takes it, polled fast): `seen` hears each
 * holder it waits for, and what it returns goes to the scaler's own `onWait`.
 */
function serviceLock(runDir: string, seen: (h: LockHolder) => unknown) {
    return (signal: AbortSignal, onWait?: (holder: string) => void) =>
        acquireWriterLock({
            runDir,
            stack: "s",
            command: "egress serve",
            waitMs: 60_000,
            pollMs: 20,
            signal,
            onWait: (h) => {
                const said = seen(h);
                if (typeof said === "string") onWait?.(said);
            },
        });
}

test("requests are refused until recovery opens the scaler, and after drain starts", async () => {
    const { driver } = scriptedDriver();
    const scaler = testScaler(driver, scalerProject());
    assert.throws(
        () => scaler.request("web", 2),
        (e: unknown) => e instanceof NotAcceptingError && e.reason === "starting",
    );
    scaler.open();
    assert.equal(scaler.request("web", 2).desired.web, 2);
});

test("while one operation runs, requests fold into one queued operation; drain keeps it for the next start and waits for the running one", async () => {
    const { driver, calls } = scriptedDriver();
    const dir = scalerProject();
    const journal = path.join(dir, "operations.json");
    const ops = new OperationLog(journal);
    const scaler = testScaler(driver, dir, { ops });
    scaler.open();
    const first = scaler.request("web", 2);
    await tick();
    assert.equal(first.status, "running");
    const a = scaler.request("web", 3);
    const b = scaler.request("web", 5);
    assert.equal(a.id, b.id);
    assert.equal(b.requests, 2);
    assert.equal(scaler.desired("web"), 5);

    const drained = scaler.drain();
    assert.throws(
        () => scaler.request("web", 4),
        (e: unknown) => e instanceof NotAcceptingError && e.reason === "stopping",
    );
    assert.equal(b.status, "queued", "answered 202 and not started: kept, not interrupted");
    calls[0].resolve();
    await drained;
    assert.equal(first.status, "succeeded");
    assert.equal(calls.length, 1, "the kept operation did not run in the stopping process");
    assert.match(fs.readFileSync(path.join(dir, "stacks", "Pulumi.s.yaml"), "utf8"), /replicas: 2/);

    // The next start (a new process on the same journal) applies it under the id the client was given.
    const next = new OperationLog(journal);
    const { carried, interrupted } = await next.recover();
    assert.deepEqual(
        carried.map((o) => [o.id, o.desired.web, o.requests]),
        [[b.id, 5, 2]],
    );
    assert.deepEqual(interrupted, []);
    const again = scriptedDriver();
    const scaler2 = testScaler(again.driver, dir, { ops: next });
    scaler2.open();
    const op = scaler2.carry(carried[0]);
    assert.equal(op.id, b.id);
    await tick();
    assert.equal(next.get(b.id)!.status, "running");
    again.calls[0].resolve();
    await scaler2.drain();
    assert.equal(next.get(b.id)!.status, "succeeded");
    assert.equal(next.get(b.id)!.createdAt, b.createdAt, "still the request the client made");
    assert.match(fs.readFileSync(path.join(dir, "stacks", "Pulumi.s.yaml"), "utf8"), /replicas: 5/);
    assert.deepEqual((await new OperationLog(journal).recover()).carried, [], "carried once, not again");
});

test("recovery: carried requests queue behind the start-up convergence and fold; stale requests and queued repairs are interrupted", async () => {
    const dir = scalerProject();
    const journal = path.join(dir, "operations.json");
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
    const rec = (id: string, kind: string, status: string, s: number, desired = {}) => ({
        id,
        kind,
        status,
        desired,
        requests: 1,
        createdAt: at(s),
    });
    fs.writeFileSync(
        journal,
        JSON.stringify([
            rec("op_old", "scale", "queued", 1, { web: 7 }), // a later count-setting operation started: stale
            rec("op_ran", "scale", "running", 2, { web: 3 }),
            rec("op_heal", "heal", "queued", 3),
            rec("op_a", "scale", "queued", 4, { web: 4 }), // queued by one leader
            rec("op_b", "scale", "queued", 5, { web: 6 }), // and a later one by the next
        ]),
    );
    const ops = new OperationLog(journal);
    const { carried, interrupted } = await ops.recover();
    assert.deepEqual(
        carried.map((o) => o.id),
        ["op_a", "op_b"],
    );
    assert.deepEqual(interrupted.map((o) => o.id).sort(), ["op_heal", "op_old", "op_ran"]);
    const { driver, calls } = scriptedDriver();
    const scaler = testScaler(driver, dir, { ops });
    scaler.open();
    const up = scaler.converge({ web: 2 }); // a rotation's count to restore: it starts at once
    await tick();
    assert.equal(up.status, "running");
    const a = scaler.carry(carried[0]);
    const b = scaler.carry(carried[1]);
    assert.equal(a.id, "op_a", "queued behind the convergence under the id the client was given");
    assert.equal(b.id, "op_a", "the later request folds into it");
    assert.equal(a.desired.web, 6, "latest wins");
    assert.equal(ops.get("op_b")!.id, "op_a", "the later request's id finds the operation it joined");
    assert.deepEqual(
        ops
            .list()
            .filter((o) => o.status === "queued")
            .map((o) => o.id),
        ["op_a"],
        "no queued record left behind that never runs",
    );
    calls[0].resolve();
    while (calls.length < 2) await tick();
    calls[1].resolve();
    await scaler.drain();
    assert.equal(ops.get("op_b")!.status, "succeeded");
    assert.match(fs.readFileSync(path.join(dir, "stacks", "Pulumi.s.yaml"), "utf8"), /replicas: 6/);
});

test(
    "a scale cut off while it waits for the writer lock is carried by the next start; it shows whom it waits for",
    {
        timeout: 20_000,
    },
    async () => {
        const { driver, calls } = scriptedDriver();
        const dir = scalerProject();
        const journal = path.join(dir, "operations.json");
        const runDir = scalerTempDir("egress-scaler-run-");
        const holder = await holdWriterLock(runDir, "s", "egress up");
        const lock = serviceLock(runDir, (h) => `pid ${h.pid} (${h.command})`);
        const ops = new OperationLog(journal);
        const scaler = testScaler(driver, dir, { ops, lock });
        scaler.open();
        const op = scaler.request("web", 4);
        try {
            while (!op.waitingForLock) await new Promise((r) => setTimeout(r, 20));
            assert.equal(op.status, "running");
            assert.equal(op.waitingForLock.holder, `pid ${holder.pid} (egress up)`);
            // A kill -9 now leaves the journal as it is: the next start reads it.
            const { carried, interrupted } = await new OperationLog(journal).recover();
            assert.deepEqual(
                carried.map((o) => [o.id, o.status, o.desired.web, o.startedAt, o.waitingForLock]),
                [[op.id, "queued", 4, undefined, undefined]],
                "applied nothing: carried like a request that never started",
            );
            assert.deepEqual(interrupted, []);
        } finally {
            await killHard(holder); // the wait ends: the lock's holder is gone
        }
        while (!calls.length) await new Promise((r) => setTimeout(r, 20));
        assert.equal(op.waitingForLock, undefined, "no longer waiting once it holds the lock");
        calls[0].resolve();
        await scaler.drain();
        assert.equal(op.status, "succeeded");
        const after = await new OperationLog(journal).recover();
        assert.deepEqual([after.carried, after.interrupted], [[], []], "done: nothing to carry");
        fs.rmSync(runDir, { recursive: true, force: true });
    },
);

test("an operation retries while another update holds the lock, then succeeds", { timeout: 20_000 }, async () => {
    const { driver, calls } = scriptedDriver();
    const scaler = testScaler(driver, scalerProject());
    scaler.open();
    const op = scaler.request("web", 3);
    await tick();
    calls[0].reject(new EngineError("up", "locked", new ConcurrentUpdateError(new Error("locked") as any)));
    while (calls.length < 2) await new Promise((r) => setTimeout(r, 50));
    calls[1].resolve();
    await scaler.drain();
    assert.equal(op.status, "succeeded");
});

test(
    "an operation waits for the writer lock another process holds, without touching the stack file; drain ends the wait and keeps the request",
    { timeout: 20_000 },
    async () => {
        const { driver, calls } = scriptedDriver();
        const dir = scalerProject();
        const runDir = scalerTempDir("egress-scaler-run-");
        const holder = await holdWriterLock(runDir, "s", "egress up");
        const waited: number[] = [];
        const lock = serviceLock(runDir, (h) => waited.push(h.pid));
        const scaler = testScaler(driver, dir, { lock });
        scaler.open();
        const before = fs.readFileSync(path.join(dir, "stacks", "Pulumi.s.yaml"), "utf8");
        const op = scaler.request("web", 4);
        try {
            while (!waited.length) await new Promise((r) => setTimeout(r, 20));
            assert.deepEqual(waited, [holder.pid]);
            assert.equal(op.status, "running");
            assert.equal(
                scaler.applying(),
                false,
                "waiting for the lock is not applying: outside changes are still followed",
            );
            assert.equal(
                fs.readFileSync(path.join(dir, "stacks", "Pulumi.s.yaml"), "utf8"),
                before,
                "nothing written without the lock",
            );
            await scaler.drain();
            assert.equal(op.status, "queued", "applied nothing: kept for the next start, as if never started");
            assert.equal(op.startedAt, undefined);
            assert.equal(calls.length, 0, "the engine never ran");
            assert.equal(fs.readFileSync(path.join(dir, "stacks", "Pulumi.s.yaml"), "utf8"), before);
        } finally {
            await killHard(holder);
            fs.rmSync(runDir, { recursive: true, force: true });
        }
    },
);
