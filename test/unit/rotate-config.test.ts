/** A pool's `rotateAfterSeconds`, `maxSurge` and `maxUnavailable`: defaults, and bad values refused at config load naming the path and the rule. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseEgressConfig, problemLines, rotateFloorSeconds } from "./config-fixtures";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "egress-rotate-config-"));
const local = (over: object) => ({
    providers: { local: { type: "local" } },
    pools: [{ name: "web", provider: "local", replicas: 3, ...over }],
});
const problems = (raw: unknown): string[] => problemLines(raw, root);

/** Runs `fn` with EGRESS_TEST_MIN_ROTATE_SECONDS set to `v` (or unset), restoring what was there. */
function withFloor<T>(v: string | undefined, fn: () => T): T {
    const before = process.env.EGRESS_TEST_MIN_ROTATE_SECONDS;
    if (v === undefined) delete process.env.EGRESS_TEST_MIN_ROTATE_SECONDS;
    else process.env.EGRESS_TEST_MIN_ROTATE_SECONDS = v;
    try {
        return fn();
    } finally {
        if (before === undefined) delete process.env.EGRESS_TEST_MIN_ROTATE_SECONDS;
        else process.env.EGRESS_TEST_MIN_ROTATE_SECONDS = before;
    }
}

test("rotateAfterSeconds is unset by default (never rotate); maxSurge defaults to 1", () => {
    const p = withFloor(undefined, () => parseEgressConfig(local({}), root)).pools[0];
    assert.equal(p.rotateAfterSeconds, undefined);
    assert.equal(p.maxSurge, 1);
    assert.equal(
        withFloor(undefined, () => parseEgressConfig(local({ rotateAfterSeconds: 60 }), root)).pools[0]
            .rotateAfterSeconds,
        60,
    );
});

test("rotateAfterSeconds below 60 is refused at its path, naming the rule and the test override", () => {
    assert.deepEqual(
        withFloor(undefined, () => problems(local({ rotateAfterSeconds: 20 }))),
        [
            "egress:pools[0].rotateAfterSeconds: must be at least 60 (seconds; tests may lower it with EGRESS_TEST_MIN_ROTATE_SECONDS) (got 20)",
        ],
    );
    assert.deepEqual(
        withFloor(undefined, () => problems(local({ rotateAfterSeconds: 2.5 }))),
        ["egress:pools[0].rotateAfterSeconds: must be a whole number (got 2.5)"],
    );
});

test("EGRESS_TEST_MIN_ROTATE_SECONDS lowers the floor; a value that is not a whole number ≥ 1 is ignored", () => {
    assert.equal(
        withFloor("5", () => parseEgressConfig(local({ rotateAfterSeconds: 20 }), root)).pools[0].rotateAfterSeconds,
        20,
    );
    assert.deepEqual(
        withFloor("30", () => problems(local({ rotateAfterSeconds: 20 }))),
        ["egress:pools[0].rotateAfterSeconds: must be at least 30 (seconds, EGRESS_TEST_MIN_ROTATE_SECONDS) (got 20)"],
    );
    for (const bad of ["", "0", "-3", "1.5", "soon"])
        assert.equal(rotateFloorSeconds({ EGRESS_TEST_MIN_ROTATE_SECONDS: bad }), 60, bad);
    assert.equal(rotateFloorSeconds({}), 60);
});

test("maxSurge 0 is refused while maxUnavailable is 0 (a rolling change needs room) and with rotation by age", () => {
    assert.deepEqual(
        withFloor(undefined, () => problems(local({ maxSurge: 0 }))),
        ["egress:pools[0].maxSurge: must be 1 or more while maxUnavailable is 0 (got 0)"],
    );
    assert.deepEqual(
        withFloor(undefined, () => problems(local({ rotateAfterSeconds: 600, maxSurge: 0, maxUnavailable: 1 }))),
        ["egress:pools[0].maxSurge: must be 1 or more with rotateAfterSeconds (got 0)"],
    );
});

test("maxUnavailable defaults to 0; with it ≥ 1, maxSurge 0 is allowed; negative or fractional values are refused", () => {
    const p = withFloor(undefined, () => parseEgressConfig(local({}), root)).pools[0];
    assert.equal(p.maxUnavailable, 0);
    const q = withFloor(undefined, () => parseEgressConfig(local({ maxSurge: 0, maxUnavailable: 2 }), root)).pools[0];
    assert.deepEqual([q.maxSurge, q.maxUnavailable], [0, 2]);
    assert.deepEqual(
        withFloor(undefined, () => problems(local({ maxUnavailable: -1 }))),
        ["egress:pools[0].maxUnavailable: must be 0 or more (got -1)"],
    );
    assert.deepEqual(
        withFloor(undefined, () => problems(local({ maxUnavailable: 1.5 }))),
        ["egress:pools[0].maxUnavailable: must be a whole number (got 1.5)"],
    );
    assert.deepEqual(
        withFloor(undefined, () => problems(local({ maxSurge: -1 }))),
        ["egress:pools[0].maxSurge: must be 0 or more (got -1)"],
    );
});

test("a pool of fixed members (static) may not rotate: its members are never replaced", () => {
    const raw = {
        providers: { byo: { type: "static", proxies: ["http://127.0.0.1:3128"] } },
        pools: [{ name: "byo", provider: "byo", replicas: 1, rotateAfterSeconds: 600 }],
    };
    assert.deepEqual(
        withFloor(undefined, () => problems(raw)),
        [
            "egress:pools[0].rotateAfterSeconds: must be unset: members of a `static` provider are never replaced (got 600)",
        ],
    );
});

test("rotateOnBlocks: unset by default; ipMemorySeconds defaults to 3600; bad values refused at their paths", () => {
    const p = withFloor(undefined, () => parseEgressConfig(local({}), root)).pools[0];
    assert.equal(p.rotateOnBlocks, undefined);
    assert.equal(p.ipMemorySeconds, 3600);
    const ok = { ratio: 0.5, minOutcomes: 10, windowSeconds: 300 };
    assert.deepEqual(
        parseEgressConfig(local({ rotateOnBlocks: ok, ipMemorySeconds: 0 }), root).pools[0].rotateOnBlocks,
        ok,
    );
    assert.deepEqual(problems(local({ rotateOnBlocks: { ratio: 0, minOutcomes: 0.5, windowSeconds: 0 } })), [
        "egress:pools[0].rotateOnBlocks.ratio: must be above 0 and at most 1 (got 0)",
        "egress:pools[0].rotateOnBlocks.minOutcomes: must be a whole number (got 0.5)",
        "egress:pools[0].rotateOnBlocks.windowSeconds: must be above 0 (got 0)",
    ]);
    assert.deepEqual(problems(local({ rotateOnBlocks: { ...ok, ratio: 1.5, minOutcomes: 0 } })), [
        "egress:pools[0].rotateOnBlocks.ratio: must be above 0 and at most 1 (got 1.5)",
        "egress:pools[0].rotateOnBlocks.minOutcomes: must be 1 or more (got 0)",
    ]);
    assert.deepEqual(problems(local({ ipMemorySeconds: -1 })), [
        "egress:pools[0].ipMemorySeconds: must be 0 (off) or more (got -1)",
    ]);
});

test("a pool of fixed members (static) may not rotate by blocks either", () => {
    const raw = {
        providers: { byo: { type: "static", proxies: ["http://127.0.0.1:3128"] } },
        pools: [
            {
                name: "byo",
                provider: "byo",
                replicas: 1,
                rotateOnBlocks: { ratio: 0.5, minOutcomes: 5, windowSeconds: 60 },
            },
        ],
    };
    assert.deepEqual(problems(raw), [
        'egress:pools[0].rotateOnBlocks: must be unset: members of a `static` provider are never replaced (got {"ratio":0.5,"minOutcomes":5,"windowSeconds":60})',
    ]);
});
