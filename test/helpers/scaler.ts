/**
 * A Scaler's parts for unit tests with a scripted engine (the real engine runs in test/service):
 * test/integration/scaler.test.ts, drift-refusal.test.ts.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import pino from "pino";
import type { StackDriver } from "../../src/engine";
import { Scaler } from "../../src/service/control/scaler";
import type { ScalerDeps } from "../../src/service/control/scaler-deps";
import { OperationLog } from "../../src/state/operations/journal";

/** Project dirs this process made, removed when it exits (the tests that use them never remove them). */
const made: string[] = [];
process.once("exit", () => made.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

/** A temp dir removed when the test process exits. */
export function scalerTempDir(prefix: string): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    made.push(dir);
    return dir;
}

/** A project dir with stack `s`: one `local` pool `web` of 1 member (at most 9). */
export function scalerProject(): string {
    const dir = scalerTempDir("egress-scaler-");
    fs.mkdirSync(path.join(dir, "stacks"));
    fs.writeFileSync(
        path.join(dir, "stacks", "Pulumi.s.yaml"),
        "config:\n  egress:providers:\n    local: { type: local }\n  egress:pools:\n    - { name: web, provider: local, replicas: 1, maxReplicas: 9 }\n",
    );
    return dir;
}

/** A driver whose `up` calls resolve when the test says so. */
export function scriptedDriver() {
    const calls: { resolve: () => void; reject: (e: unknown) => void }[] = [];
    const driver = {
        // A count change replaces nothing (rolling changes: test/service/rolling.test.ts).
        previewReplaced: async () => [],
        // Nothing in state to target (engine countTargets): a scale runs a plain `up`.
        countTargets: async () => undefined,
        up: () =>
            new Promise((resolve, reject) =>
                calls.push({ resolve: () => resolve({ kind: "up", changes: { same: 1 }, durationMs: 1 }), reject }),
            ),
    } as unknown as StackDriver;
    return { driver, calls };
}

/** A Scaler of stack `s` in `projectRoot` with a silent log; `more`: its operation log (a fresh one by default), lock, …. */
export function testScaler(driver: StackDriver, projectRoot: string, more: Partial<ScalerDeps> = {}): Scaler {
    return new Scaler({
        driver,
        projectRoot,
        stack: "s",
        ops: new OperationLog(),
        log: pino({ level: "silent" }),
        ...more,
    });
}
