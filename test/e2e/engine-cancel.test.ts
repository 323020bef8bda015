/**
 * `StackDriver.cancel()` on the real engine under egress-supervise: the SIGINT reaches the Pulumi CLI (the
 * supervisor does not forward SIGINT, so it has to go to the supervisor's process group), the update
 * ends as interrupted with state saved, and no engine process of the run is left behind. The driver runs
 * in a child process (test/fixtures/engine-cancel/run.ts), so that the program's late, dropped calls to
 * the dead engine are judged by the product's own handler: the process must survive them.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { pidsMentioning } from "../helpers/project";

const FIXTURE = path.join(__dirname, "..", "fixtures", "engine-cancel", "run.js");

test(
    "cancel() during up interrupts the update; destroy then removes what it created",
    { timeout: 240_000 },
    async (t) => {
        const child = spawn(process.execPath, [FIXTURE], { stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
        child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
        const steps = () =>
            stdout
                .split("\n")
                .filter(Boolean)
                .map((l) => JSON.parse(l) as Record<string, unknown>);
        t.after(() => {
            // Also when an assertion failed: nothing of this test may keep running.
            child.kill("SIGKILL");
            const dir = steps()[0]?.dir as string | undefined;
            if (!dir) return;
            for (const pid of pidsMentioning(dir)) process.kill(pid, "SIGKILL");
            fs.rmSync(dir, { recursive: true, force: true });
        });
        const code = await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
        const [, run, end] = steps();
        assert.ok(run, `the fixture reported the cancelled run; stderr: ${stderr}`);
        assert.equal(run.cancelled, true, "an operation was running to cancel");
        assert.equal(run.interrupted, true, String(run.message));
        assert.deepEqual(run.engineLeft, [], "the supervisor left no engine process of the run");
        assert.ok(end, `the fixture reported the destroy; stderr: ${stderr}`);
        assert.deepEqual(end.proxiesLeft, [], "no proxy process is left");
        assert.equal(code, 0, `the process survives the program's dropped calls to the engine; stderr: ${stderr}`);
    },
);
