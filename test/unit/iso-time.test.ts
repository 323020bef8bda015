/**
 * isoTime (fleet/acquire-answer.ts), the lease times of every grant, is `new Date(ms).toISOString()`
 * whatever the order of the times it is asked for: within one second, across seconds, repeats, the
 * edges of a second, and times outside the four-digit years it caches.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { isoTime } from "../../src/service/fleet/acquire-answer";

test("isoTime is Date's ISO text for times in any order", () => {
    const base = Date.UTC(2026, 11, 7, 2, 30, 59, 990);
    const times = [
        base,
        base + 5,
        base + 9,
        base + 10, // the next second
        base + 3_600_000,
        base + 11,
        base,
        0,
        1,
        999,
        1000,
        253402300799999, // the last millisecond of 9999
        253402300800000, // a five-digit year: not cached
        -1, // before 1970: not cached
        base + 0.5, // not whole: not cached
    ];
    let seed = 7;
    for (let i = 0; i < 5000; i++) {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        times.push(base + (seed % 7200_000) - 3600_000);
    }
    for (const ms of times) assert.equal(isoTime(ms), new Date(ms).toISOString(), `at ${ms}`);
});
