/**
 * `StackDriver.cancel()` on the real engine under egress-supervise: the SIGINT reaches the Pulumi CLI (the
 * supervisor does not forward SIGINT, so it has to go to the supervisor's process group), the update
 * ends as interrupted with state saved, and no engine process of the run is left behind.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { EngineError } from "../../src/engine";
import { pidsMentioning, tempProject } from "../helpers/project";
import { engineProcessesOf } from "../helpers/processes";

test("cancel() during up interrupts the update; destroy then removes what it created", async (t) => {
    const p = tempProject("cancel", {
        "egress:providers": { local: { type: "local" } },
        "egress:pools": [{ name: "web", provider: "local", replicas: 6 }],
    });
    t.after(async () => {
        // Also when an assertion failed before the destroy below: nothing of this test may keep running.
        await p.driver.destroy().catch(() => undefined);
        for (const pid of pidsMentioning(p.dir)) process.kill(pid, "SIGKILL");
        p.cleanup();
    });
    let cancelled = false;
    const outcome = await p.driver
        .up({
            onProgress: (e) => {
                if (!cancelled && e.kind === "resource-start") cancelled = p.driver.cancel();
            },
        })
        .then(
            (r) => new Error(`up completed (${JSON.stringify(r.changes)}): the cancel never reached the engine`),
            (e: unknown) => e,
        );
    assert.ok(cancelled, "an operation was running to cancel");
    assert.ok(outcome instanceof EngineError && outcome.interrupted, String((outcome as Error).message));
    assert.deepEqual(engineProcessesOf(process.pid), [], "the supervisor left no engine process of the run");

    await p.driver.destroy();
    assert.deepEqual(pidsMentioning(p.dir), [], "no proxy process is left");
});
