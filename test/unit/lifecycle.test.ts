/** The service's lifecycle: parts start in list order, stop in reverse; a failing stop does not stop the walk; a failing start stops the started ones. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { type LifePart, Lifecycle } from "../../src/service/start/lifecycle";

/** A logger that keeps what was warned. */
function warnings() {
    const warned: { part: unknown; msg: string }[] = [];
    return { warned, log: { warn: (o: { part?: unknown }, msg: string) => void warned.push({ part: o.part, msg }) } };
}

/** Parts that record their starts and stops in `seen`; `fail` names the ones that throw. */
function recorded(names: string[], fail: { start?: string; stop?: string } = {}) {
    const seen: string[] = [];
    const parts: LifePart<string>[] = names.map((name) => ({
        name,
        start: async () => {
            await Promise.resolve();
            if (fail.start === name) throw new Error(`${name} would not start`);
            seen.push(`start ${name}`);
        },
        stop: async (how: string) => {
            await Promise.resolve();
            seen.push(`stop ${name} (${how})`);
            if (fail.stop === name) throw new Error(`${name} would not stop`);
        },
    }));
    return { seen, parts };
}

test("parts start in list order and stop in the reverse order, each told how", async () => {
    const { seen, parts } = recorded(["a", "b", "c"]);
    const { log, warned } = warnings();
    const life = new Lifecycle(parts, log);
    await life.start("aborted");
    await life.stop("graceful");
    assert.deepEqual(seen, [
        "start a",
        "start b",
        "start c",
        "stop c (graceful)",
        "stop b (graceful)",
        "stop a (graceful)",
    ]);
    assert.deepEqual(warned, []);
});

test("a part with no start still stops where it sits; one with no stop is passed over", async () => {
    const seen: string[] = [];
    const life = new Lifecycle<void>(
        [
            { name: "closed last", stop: () => seen.push("stop closed last") },
            { name: "opens", start: () => seen.push("start opens") },
            { name: "both", start: () => seen.push("start both"), stop: () => seen.push("stop both") },
        ],
        warnings().log,
    );
    await life.start();
    await life.stop();
    assert.deepEqual(seen, ["start opens", "start both", "stop both", "stop closed last"]);
});

test("a failing stop is logged and the walk goes on", async () => {
    const { seen, parts } = recorded(["a", "b", "c"], { stop: "b" });
    const { log, warned } = warnings();
    const life = new Lifecycle(parts, log);
    await life.start("aborted");
    await life.stop("graceful"); // does not throw
    assert.deepEqual(seen.slice(3), ["stop c (graceful)", "stop b (graceful)", "stop a (graceful)"]);
    assert.deepEqual(warned, [{ part: "b", msg: "stopping b failed; stopping the rest" }]);
});

test("a failing start stops the started ones in reverse, told so, and rethrows", async () => {
    const { seen, parts } = recorded(["a", "b", "c", "d"], { start: "c" });
    const life = new Lifecycle(parts, warnings().log);
    await assert.rejects(life.start("aborted"), /c would not start/);
    assert.deepEqual(seen, ["start a", "start b", "stop b (aborted)", "stop a (aborted)"]);
    await life.stop("graceful"); // nothing left to stop
    assert.equal(seen.length, 4);
});

test("a part stops once: a second stop waits for the first", async () => {
    const { seen, parts } = recorded(["a", "b"]);
    const life = new Lifecycle(parts, warnings().log);
    await life.start("aborted");
    await Promise.all([life.stop("first"), life.stop("second")]);
    assert.deepEqual(seen.slice(2), ["stop b (first)", "stop a (first)"]);
    await assert.rejects(life.start("aborted"), /a lifecycle starts once/);
});
