/**
 * A replica whose stack file drifted from the other homes' (src/service/cluster/home.ts driftReason)
 * starts no engine operation: the scaler's writer lock is refused (src/state/cluster/scope.ts refusingDrift, as
 * start/parts.ts wraps it) before the engine runs or the stack file changes, the operation fails
 * `[transient]` with the reason, so the convergence retry takes it up, and once the homes agree the
 * same request goes through. The scaler, the writer lock and the stack file are real; the engine is
 * scripted (the drift itself is tested with real replicas in test/service/replica-hosts.test.ts).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { acquireWriterLock } from "../../src/engine";
import { errorClassOf } from "../../components/shared/errors";
import { refusingDrift } from "../../src/state/cluster/scope";
import { ConvergenceRetry } from "../../src/service/control/heal/convergence";
import { scalerProject, scriptedDriver, testScaler } from "../helpers/scaler";

import type { Operation } from "../../src/state/operations/operation";
import { waitFor } from "../helpers/harness";

const settled = (op: Operation) =>
    waitFor(`operation ${op.id} to settle`, () => op.status !== "queued" && op.status !== "running", 10_000, 10);

test("a drifted replica's scale fails [transient] before the engine runs or the file changes; after the drift it applies", async () => {
    const { driver, calls } = scriptedDriver();
    const dir = scalerProject();
    const runDir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-drift-run-"));
    const file = path.join(dir, "stacks", "Pulumi.s.yaml");
    const before = fs.readFileSync(file, "utf8");
    let drift: string | undefined =
        "this replica's stack file changed (config:aaaa), but replicas of other homes still run the stack with config:bbbb: make the same change to every home's stack file; nothing was applied [transient]";
    // The writer lock as start/parts.ts takes it (without its logging), refused while drifted.
    const lock = refusingDrift(
        () => drift,
        (signal: AbortSignal) =>
            acquireWriterLock({ runDir, stack: "s", command: "egress serve", waitMs: 5000, pollMs: 20, signal }),
    );
    const scaler = testScaler(driver, dir, { lock });
    scaler.open();
    try {
        const refused = scaler.request("web", 3);
        await settled(refused);
        assert.equal(refused.status, "failed", JSON.stringify(refused));
        assert.match(refused.error ?? "", /replicas of other homes still run the stack with config:bbbb/);
        assert.equal(errorClassOf(refused.error ?? ""), "transient", "the convergence retry takes it up");
        assert.ok(new ConvergenceRetry().settled(refused), "a retry is scheduled");
        assert.equal(calls.length, 0, "no engine run");
        assert.equal(fs.readFileSync(file, "utf8"), before, "the stack file is as it was");
        assert.deepEqual(
            fs.readdirSync(path.join(runDir)).filter((f) => f.includes("lock")),
            [],
            "no lock left",
        );

        drift = undefined; // every home has the change now
        const applied = scaler.request("web", 3);
        while (!calls.length) await new Promise((r) => setTimeout(r, 10));
        calls[0].resolve();
        await settled(applied);
        assert.equal(applied.status, "succeeded", JSON.stringify(applied));
        assert.match(fs.readFileSync(file, "utf8"), /replicas: 3/);
    } finally {
        await scaler.drain();
        fs.rmSync(runDir, { recursive: true, force: true });
        fs.rmSync(dir, { recursive: true, force: true });
    }
});
