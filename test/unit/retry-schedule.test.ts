/** The shared retry schedule and the error classes' tags (components/shared/retry.ts, components/shared/errors.ts). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { classifyHttp, errorClassOf, tagMessage } from "../../components/shared/errors";
import { DEFAULT_RETRY_SCHEDULE, defaultRetrySchedule, retryDelays, withRetry } from "../../components/shared/retry";

test("the default schedule waits 1, 2, 4 s between 4 tries; waits are capped", () => {
    assert.deepEqual(retryDelays(DEFAULT_RETRY_SCHEDULE), [1000, 2000, 4000]);
    assert.deepEqual(
        retryDelays({ tries: 6, firstDelayMs: 1000, maxDelayMs: 8000, maxTotalMs: 60000 }),
        [1000, 2000, 4000, 8000, 8000],
    );
    assert.deepEqual(retryDelays({ tries: 1, firstDelayMs: 1000, maxDelayMs: 8000, maxTotalMs: 0 }), []);
});

test("EGRESS_RETRY_SCHEDULE overrides the default; a malformed one is refused", () => {
    assert.deepEqual(defaultRetrySchedule({}), DEFAULT_RETRY_SCHEDULE);
    assert.deepEqual(defaultRetrySchedule({ EGRESS_RETRY_SCHEDULE: "3,10,40,1000" }), {
        tries: 3,
        firstDelayMs: 10,
        maxDelayMs: 40,
        maxTotalMs: 1000,
    });
    assert.throws(
        () => defaultRetrySchedule({ EGRESS_RETRY_SCHEDULE: "0,10,40,1000" }),
        /EGRESS_RETRY_SCHEDULE must be/,
    );
    assert.throws(() => defaultRetrySchedule({ EGRESS_RETRY_SCHEDULE: "fast" }), /EGRESS_RETRY_SCHEDULE must be/);
});

test("withRetry retries only what is retryable, stops at the total cap, and says it gave up", async () => {
    let n = 0;
    const ok = await withRetry(async () => (++n < 3 ? Promise.reject(new Error("blip")) : "done"), {
        schedule: { tries: 4, firstDelayMs: 1, maxDelayMs: 2, maxTotalMs: 1000 },
        retryable: () => true,
    });
    assert.deepEqual([ok, n], ["done", 3]);

    n = 0;
    await assert.rejects(
        withRetry(
            async () => {
                n++;
                throw new Error("bad key");
            },
            { schedule: { tries: 4, firstDelayMs: 1, maxDelayMs: 1, maxTotalMs: 1000 }, retryable: () => false },
        ),
        { message: "bad key" },
    );
    assert.equal(n, 1);

    // The cap: the second wait (40 ms) would pass 50 ms in all, so only two tries run.
    n = 0;
    await assert.rejects(
        withRetry(
            async () => {
                n++;
                throw new Error("down");
            },
            { schedule: { tries: 5, firstDelayMs: 20, maxDelayMs: 100, maxTotalMs: 50 }, retryable: () => true },
        ),
        { message: /^down \(gave up after 2 tries in \d+\.\d s\)$/ },
    );
    assert.equal(n, 2);
});

test("an aborted signal ends the waiting at once", async () => {
    const ac = new AbortController();
    const started = Date.now();
    setTimeout(() => ac.abort(), 20);
    await assert.rejects(
        withRetry(
            async () => {
                throw new Error("down");
            },
            {
                schedule: { tries: 3, firstDelayMs: 10_000, maxDelayMs: 10_000, maxTotalMs: 60_000 },
                retryable: () => true,
                signal: ac.signal,
            },
        ),
        /down/,
    );
    assert.ok(Date.now() - started < 5000, "did not wait out the 10 s delay");
});

test("HTTP classes: quota before anything, then 408/429/5xx/no answer transient, other 4xx permanent", () => {
    assert.equal(classifyHttp(403, "QUOTA_EXCEEDED"), "quota");
    assert.equal(classifyHttp(429, undefined, "Quota exceeded: QUOTA_EXCEEDED"), "quota");
    assert.equal(classifyHttp(403, "Forbidden", 'pods "a" is forbidden: exceeded quota: q'), "quota");
    for (const s of [0, 408, 429, 500, 502, 503, 504]) assert.equal(classifyHttp(s), "transient", String(s));
    assert.equal(classifyHttp(403, "rateLimitExceeded"), "transient");
    for (const s of [400, 401, 403, 404, 409]) assert.equal(classifyHttp(s), "permanent", String(s));
});

test("the class travels in the message and is read back from any text that quotes it", () => {
    assert.equal(tagMessage("x", "quota"), "[quota] x");
    assert.equal(tagMessage("[transient] x", "permanent"), "[transient] x");
    assert.equal(errorClassOf("error: update failed: [permanent] libvirt root@h:22 (host a): bad XML"), "permanent");
    assert.equal(errorClassOf(Object.assign(new Error("untagged"), { errorClass: "quota" })), "quota");
    assert.equal(errorClassOf(new Error("nothing here")), undefined);
});
