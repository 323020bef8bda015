/**
 * The scaler with a real Drainer over a scripted driver and a fake fleet: a scale-down waits for the
 * leased member before any engine run, a release lets it go on at once, and a graceful stop mid-drain
 * records the operation as interrupted without an engine run (the stack file keeps the new count for
 * the next start) and lifts the drain mark.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import pino from "pino";
import type { StackDriver } from "../../src/engine";
import { Scaler } from "../../src/service/control/scaler";
import { OperationLog } from "../../src/state/operations/journal";
import { Drainer } from "../../src/service/control/drain/drainer";
import { loadStackConfig } from "../../src/config";
import { scalerTempDir } from "../helpers/scaler";

function setup() {
    const dir = scalerTempDir("egress-scaler-drain-");
    fs.mkdirSync(path.join(dir, "stacks"));
    fs.writeFileSync(
        path.join(dir, "stacks", "Pulumi.s.yaml"),
        "config:\n  egress:providers:\n    local: { type: local }\n  egress:pools:\n    - { name: web, provider: local, replicas: 2, maxReplicas: 9, drainSeconds: 60 }\n",
    );
    const leased = new Set(["web-1"]);
    const draining = new Map<string, number>();
    const listeners = new Set<() => void>();
    const fleet = {
        isLeased: (id: string) => leased.has(id),
        setDraining: (id: string, until: number | undefined) =>
            void (until === undefined ? draining.delete(id) : draining.set(id, until)),
        revoke: (id: string) => leased.delete(id),
        onRelease: (fn: () => void) => (listeners.add(fn), () => void listeners.delete(fn)),
    };
    const releaseLease = (id: string) => {
        leased.delete(id);
        for (const fn of listeners) fn();
    };
    const ups: number[] = [];
    const driver = {
        // A count change replaces nothing (rolling changes: test/service/rolling.test.ts).
        previewReplaced: async () => [],
        countTargets: async () => undefined, // nothing in state to target: a plain `up`
        up: async () => (ups.push(Date.now()), { kind: "up", changes: { delete: 1 }, durationMs: 1 }),
    } as unknown as StackDriver;
    const log = pino({ level: "silent" });
    const drainer = new Drainer({ fleet, log, drainSeconds: () => 60, pollMs: 10_000 });
    const ops = new OperationLog();
    const members = () => [0, 1].map((index) => ({ id: `web-${index}`, pool: "web", index }));
    const scaler = new Scaler({ driver, projectRoot: dir, stack: "s", ops, log, drain: { drainer, members } });
    scaler.open();
    return { dir, scaler, ops, draining, leased, releaseLease, ups };
}

const waitUntil = async (f: () => boolean) => {
    for (let i = 0; i < 200 && !f(); i++) await new Promise((r) => setTimeout(r, 5));
    assert.ok(f());
};

test("scale-down: no engine run while the leased member drains; its release (not the poll) lets the operation go on", async () => {
    const { dir, scaler, draining, releaseLease, ups } = setup();
    const op = scaler.request("web", 1);
    await waitUntil(() => op.drain?.draining === true);
    assert.deepEqual([...draining.keys()], ["web-1"]);
    assert.equal(loadStackConfig(dir, "s").pools[0].replicas, 1, "written before the drain");
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(ups, [], "no engine run yet");
    const t0 = Date.now();
    releaseLease("web-1");
    await waitUntil(() => op.status === "succeeded");
    assert.ok(ups[0] - t0 < 1000, "woken by the release, not the 10 s poll");
    assert.deepEqual(op.drain, {
        draining: false,
        members: [{ member: "web-1", reason: "scaled-down", until: op.drain!.members[0].until, state: "idle" }],
    });
    assert.deepEqual([...draining.keys()], [], "the mark is lifted once the operation settled");
});

test("graceful stop mid-drain: interrupted, no engine run, the stack file keeps the new count, the mark is lifted", async () => {
    const { dir, scaler, ops, draining, ups } = setup();
    const op = scaler.request("web", 0);
    await waitUntil(() => op.drain?.draining === true);
    assert.deepEqual([...draining.keys()].sort(), ["web-0", "web-1"]);
    await scaler.drain();
    assert.equal(ops.get(op.id)!.status, "interrupted");
    assert.match(op.error!, /stopped while this operation drained members/);
    assert.deepEqual(ups, []);
    assert.equal(loadStackConfig(dir, "s").pools[0].replicas, 0);
    assert.deepEqual([...draining.keys()], []);
});
