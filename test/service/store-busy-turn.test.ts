/**
 * A turn longer than the command timeout does not fail commands Redis answered during it: the store's
 * script calls (src/service/store/script-call.ts PatientCommand) read the socket before they time out.
 * Against a real redis-server: the event loop is held busy past the timeout right after the commands
 * are sent, as a burst of lease requests holds it on a loaded machine.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import Redis from "ioredis";
import { startRedis, type TestRedis } from "../helpers/redis";
import { StoreScript } from "../../src/service/store/script-call";

let redis: TestRedis;
before(async () => {
    redis = await startRedis();
});
after(async () => {
    await redis?.cleanup();
});

const TIMEOUT_MS = 100;

/** A client set as the store's (no offline queue, a command timeout), once connected. */
async function client(): Promise<Redis> {
    const r = new Redis(redis.url, { commandTimeout: TIMEOUT_MS, maxRetriesPerRequest: 0, enableOfflineQueue: false });
    after(() => r.disconnect());
    await new Promise((ready) => r.once("ready", ready));
    return r;
}

/** Holds the event loop for `ms` without yielding (the CPU a burst of requests takes). */
function busy(ms: number): void {
    const end = Date.now() + ms;
    while (Date.now() < end);
}

test("a script call whose answer came while the loop was busy past the timeout succeeds", async () => {
    const r = await client();
    const echo = new StoreScript("return ARGV[1]");
    await echo.load(r, "k", ["warm"]); // cached in Redis: the calls below are EVALSHA
    const calls = Array.from({ length: 50 }, (_, i) => echo.send(r, "k", [`v${i}`]));
    busy(TIMEOUT_MS * 3);
    const got = await Promise.allSettled(calls);
    const failed = got.filter((g) => g.status === "rejected").map((g) => String((g as PromiseRejectedResult).reason));
    assert.deepEqual(failed, [], "no call failed");
    assert.deepEqual(
        got.map((g) => (g as PromiseFulfilledResult<unknown>).value),
        Array.from({ length: 50 }, (_, i) => `v${i}`),
    );
});

test("ioredis' own command, in the same turn, is failed by its timer: what the store's calls avoid", async () => {
    const r = await client();
    const plain = r.echo("x");
    busy(TIMEOUT_MS * 3);
    await assert.rejects(plain, /Command timed out/);
});

test("a Redis that does not answer still fails a script call at about the timeout", async () => {
    const r = await client();
    const echo = new StoreScript("return ARGV[1]");
    await echo.load(r, "k", ["warm"]);
    // A stopped server (SIGSTOP: alive, answers nothing) for 1 s.
    const pid = redis.pid()!;
    process.kill(pid, "SIGSTOP");
    after(() => process.kill(pid, "SIGCONT"));
    const started = Date.now();
    await assert.rejects(echo.send(r, "k", ["late"]), /Command timed out/);
    const took = Date.now() - started;
    process.kill(pid, "SIGCONT");
    assert.ok(took >= TIMEOUT_MS && took < 900, `failed after ${took} ms`);
});
