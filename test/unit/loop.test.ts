/**
 * The one loop helper (src/state/redis/loop.ts): one round at a time, the first round when asked, a
 * stop() that waits for the round in flight, a failing streak logged once (and its end once), quiet
 * errors not at all. Real timers at 1 ms; every wait is on a promise a round resolves, never a sleep
 * whose length decides the verdict.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { setImmediate as tick } from "node:timers/promises";
import { createLogger } from "../../src/log/logger";
import { Loop, type LoopOptions } from "../../src/state/redis/loop";

// The loop's timers are unref'd (a loop never keeps the service alive): this one keeps the test alive
// while it waits for rounds.
const alive = setInterval(() => undefined, 60_000);
after(() => clearInterval(alive));

/** A logger whose lines (level, msg, failures) land in `lines`. */
function capture() {
    const lines: { level: number; msg: string; failures?: number }[] = [];
    const log = createLogger({
        level: "debug",
        destination: { write: (l: string) => void lines.push(JSON.parse(l)) },
    });
    return { log, lines };
}

/** Resolves once `count()` reaches `n`: `poke()` after each change. */
function counter() {
    let n = 0;
    const waiting: { at: number; resolve: () => void }[] = [];
    return {
        get n() {
            return n;
        },
        poke() {
            n++;
            for (const w of waiting.filter((w) => w.at <= n)) w.resolve();
        },
        reach(at: number): Promise<void> {
            return at <= n ? Promise.resolve() : new Promise((resolve) => waiting.push({ at, resolve }));
        },
    };
}

const loop = (o: Partial<LoopOptions> & Pick<LoopOptions, "round">) =>
    new Loop({ name: "test", everyMs: 1, log: capture().log, ...o });

test("with firstAfterMs 0 the first round starts inside start(); rounds follow every everyMs", async () => {
    const rounds = counter();
    const l = loop({ firstAfterMs: 0, round: () => rounds.poke() });
    l.start();
    assert.equal(rounds.n, 1, "the first round ran before start() returned");
    await rounds.reach(3);
    await l.stop();
});

test("without firstAfterMs the first round waits everyMs", async () => {
    const rounds = counter();
    const l = loop({ everyMs: 60_000, round: () => rounds.poke() });
    l.start();
    await tick();
    assert.equal(rounds.n, 0);
    await l.stop();
});

test("one round at a time: a slow round is never overlapped, and a second start() adds no chain", async () => {
    const rounds = counter();
    let active = 0;
    let most = 0;
    const l = loop({
        firstAfterMs: 0,
        round: async () => {
            most = Math.max(most, ++active);
            await new Promise((r) => setTimeout(r, 5)); // five times everyMs
            active--;
            rounds.poke();
        },
    });
    l.start();
    l.start();
    await rounds.reach(4);
    await l.stop();
    assert.equal(most, 1);
    assert.equal(active, 0, "stop() returned after the round in flight ended");
});

test("stop() waits for the round in flight, and no round starts after it", async () => {
    const started = counter();
    let release!: () => void;
    let ended = false;
    const l = loop({
        firstAfterMs: 0,
        round: async () => {
            started.poke();
            await new Promise<void>((r) => (release = r));
            ended = true;
        },
    });
    l.start();
    await started.reach(1);
    let stopped = false;
    const stopping = l.stop().then(() => (stopped = true));
    await tick();
    assert.equal(stopped, false, "stop() is still waiting for the round");
    release();
    await stopping;
    assert.equal(ended, true);
    assert.equal(l.started, false);
    // Absence can only be checked over some time: 20 intervals, with no round started in them.
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(started.n, 1);
});

test("start() after stop() runs rounds again; a stopped loop stops at once when nothing is in flight", async () => {
    const rounds = counter();
    const l = loop({ everyMs: 60_000, firstAfterMs: 0, round: () => rounds.poke() });
    l.start();
    await l.stop();
    l.start();
    assert.equal(rounds.n, 2);
    await l.stop();
});

test("a failing streak: one warn, debug while it lasts, one info when a round succeeds; then a new streak warns", async () => {
    const { log, lines } = capture();
    const rounds = counter();
    const outcomes = [false, false, false, true, true, false, true];
    const l = new Loop({
        name: "sample",
        everyMs: 1,
        firstAfterMs: 0,
        log,
        round: () => {
            const ok = outcomes[rounds.n] ?? true;
            rounds.poke();
            if (!ok) throw new Error(`round ${rounds.n} broke`);
        },
    });
    l.start();
    await rounds.reach(outcomes.length);
    await l.stop();
    assert.deepEqual(
        lines.map((x) => [x.level, x.msg]),
        [
            [40, "sample round failed"],
            [20, "sample round failed again (2 in a row)"],
            [20, "sample round failed again (3 in a row)"],
            [30, "sample rounds succeed again after 3 failed"],
            [40, "sample round failed"],
            [30, "sample rounds succeed again after 1 failed"],
        ],
    );
});

test("a quiet error (the service stopping) logs nothing and neither starts nor ends a streak", async () => {
    const { log, lines } = capture();
    const rounds = counter();
    class Stopping extends Error {}
    const outcomes = ["quiet", "fail", "quiet", "ok"];
    const l = new Loop({
        name: "heal",
        everyMs: 1,
        firstAfterMs: 0,
        log,
        quiet: (e) => e instanceof Stopping,
        round: async () => {
            const o = outcomes[rounds.n] ?? "ok";
            rounds.poke();
            if (o === "quiet") throw new Stopping();
            if (o === "fail") throw new Error("broke");
        },
    });
    l.start();
    await rounds.reach(outcomes.length);
    await l.stop();
    assert.deepEqual(
        lines.map((x) => [x.level, x.msg]),
        [
            [40, "heal round failed"],
            [30, "heal rounds succeed again after 1 failed"],
        ],
    );
});

test("bad intervals fail at construction, naming the field", () => {
    assert.throws(() => loop({ everyMs: 0, round: () => undefined }), /loop test: `everyMs` must be a positive/);
    assert.throws(() => loop({ everyMs: NaN, round: () => undefined }), /`everyMs`/);
    assert.throws(
        () => loop({ firstAfterMs: -1, round: () => undefined }),
        /`firstAfterMs` must be a number of ms ≥ 0/,
    );
});
