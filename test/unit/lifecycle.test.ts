/**
 * The service's life as one list (src/service/start/lifecycle.ts): started forward, stopped backward; a
 * start that fails stops what already started, last first, with `failed`, and its error goes up.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { type LifePart, startAll, stopAll } from "../../src/service/start/lifecycle";

function recorder(names: string[], failing?: string) {
    const seen: string[] = [];
    const parts: LifePart[] = names.map((name) => ({
        name,
        start: async () => {
            if (name === failing) throw new Error(`${name} refused`);
            seen.push(`start ${name}`);
        },
        stop: (how) => void seen.push(`stop ${name}${how.failed ? " (failed)" : ""}`),
    }));
    return { seen, parts };
}

test("parts start in order and stop in the reverse order", async () => {
    const { seen, parts } = recorder(["store", "listeners", "leadership"]);
    await startAll(parts);
    await stopAll(parts, { drain: {} });
    assert.deepEqual(seen, [
        "start store",
        "start listeners",
        "start leadership",
        "stop leadership",
        "stop listeners",
        "stop store",
    ]);
});

test("a failed start stops only what started, last first, and rethrows", async () => {
    const { seen, parts } = recorder(["store", "listeners", "stack", "loops"], "stack");
    await assert.rejects(startAll(parts), /stack refused/);
    assert.deepEqual(seen, ["start store", "start listeners", "stop listeners (failed)", "stop store (failed)"]);
});

test("parts without start or stop are walked over", async () => {
    const seen: string[] = [];
    const parts: LifePart[] = [
        { name: "a", start: () => void seen.push("start a") },
        { name: "b" },
        { name: "c", stop: () => void seen.push("stop c") },
    ];
    await startAll(parts);
    await stopAll(parts, {});
    assert.deepEqual(seen, ["start a", "stop c"]);
});
