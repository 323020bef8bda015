/**
 * Scaler coordination with a scripted driver (the real engine runs in test/service): gating before
 * recovery and during shutdown, folding of queued requests, interrupted queued work on drain, and
 * retry while another update holds the stack lock.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import pino from "pino";
import { ConcurrentUpdateError } from "@pulumi/pulumi/automation";
import { acquireWriterLock, EngineError, StackDriver } from "../../src/engine";
import { NotAcceptingError, Scaler } from "../../src/service/control/scaler";
import { OperationLog } from "../../src/service/operations/journal";
import { holdWriterLock, killHard } from "../helpers/cli";

function project(): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-scaler-"));
    fs.mkdirSync(path.join(dir, "stacks"));
    fs.writeFileSync(
        path.join(dir, "stacks", "Pulumi.s.yaml"),
        "config:\n  egress:providers:\n    local: { type: local }\n  egress:pools:\n    - { name: web, provider: local, replicas: 1, maxReplicas: 9 }\n",
    );
    return dir;
}

/** A driver whose `up` calls resolve when the test says so. */
function scriptedDriver() {
    const calls: { resolve: () => void; reject: (e: unknown) => void }[] = [];
    const driver = {
        // A count change replaces nothing (rolling changes: test/service/rolling.test.ts).
        previewReplaced: async () => [],
        up: () =>
            new Promise((resolve, reject) =>
                calls.push({ resolve: () => resolve({ kind: "up", changes: { same: 1 }, durationMs: 1 }), reject }),
            ),
    } as unknown as StackDriver;
    return { driver, calls };
}

const tick = () => new Promise((r) => setImmediate(r));

test("requests are refused until recovery opens the scaler, and after drain starts", async () => {
    const { driver } = scriptedDriver();
    const scaler = new Scaler({
        driver,
        projectRoot: project(),
        stack: "s",
        ops: new OperationLog(),
        log: pino({ level: "silent" }),
    });
    assert.throws(
        () => scaler.request("web", 2),
        (e: unknown) => e instanceof NotAcceptingError && e.reason === "starting",
    );
    scaler.open();
    assert.equal(scaler.request("web", 2).desired.web, 2);
});

test("while one operation runs, requests fold into one queued operation; drain interrupts it and waits for the running one", async () => {
    const { driver, calls } = scriptedDriver();
    const ops = new OperationLog();
    const dir = project();
    const scaler = new Scaler({ driver, projectRoot: dir, stack: "s", ops, log: pino({ level: "silent" }) });
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
    assert.equal(b.status, "interrupted");
    calls[0].resolve();
    await drained;
    assert.equal(first.status, "succeeded");
    assert.equal(calls.length, 1, "the interrupted operation never ran");
    assert.match(fs.readFileSync(path.join(dir, "stacks", "Pulumi.s.yaml"), "utf8"), /replicas: 2/);
});

test("an operation retries while another update holds the lock, then succeeds", { timeout: 20_000 }, async () => {
    const { driver, calls } = scriptedDriver();
    const scaler = new Scaler({
        driver,
        projectRoot: project(),
        stack: "s",
        ops: new OperationLog(),
        log: pino({ level: "silent" }),
    });
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
    "an operation waits for the writer lock another process holds, without touching the stack file; drain interrupts the wait",
    { timeout: 20_000 },
    async () => {
        const { driver, calls } = scriptedDriver();
        const dir = project();
        const runDir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-scaler-run-"));
        const holder = await holdWriterLock(runDir, "s", "egress up");
        const waited: number[] = [];
        const lock = (signal: AbortSignal) =>
            acquireWriterLock({
                runDir,
                stack: "s",
                command: "egress serve",
                waitMs: 60_000,
                pollMs: 20,
                signal,
                onWait: (h) => waited.push(h.pid),
            });
        const scaler = new Scaler({
            driver,
            projectRoot: dir,
            stack: "s",
            ops: new OperationLog(),
            log: pino({ level: "silent" }),
            lock,
        });
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
            assert.equal(op.status, "interrupted");
            assert.match(op.error ?? "", /stopped while this operation waited for the stack's writer lock/);
            assert.equal(calls.length, 0, "the engine never ran");
            assert.equal(fs.readFileSync(path.join(dir, "stacks", "Pulumi.s.yaml"), "utf8"), before);
        } finally {
            await killHard(holder);
            fs.rmSync(runDir, { recursive: true, force: true });
        }
    },
);
