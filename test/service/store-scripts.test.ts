/**
 * How the Redis lease store sends its scripts (store/script-call.ts): EVALSHA, and EVAL only when Redis
 * answers NOSCRIPT (a restart without persistence, a SCRIPT FLUSH), after which EVALSHA finds them again.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import Redis from "ioredis";
import { startRedis, type TestRedis } from "../helpers/redis";
import { createLogger } from "../../src/log/logger";
import { RedisLeaseStore } from "../../src/service/store";

let redis: TestRedis;
let admin: Redis;
let store: RedisLeaseStore;

/** Calls of `name` in INFO commandstats since the last CONFIG RESETSTAT. */
async function calls(name: string): Promise<number> {
    const m = new RegExp(`^cmdstat_${name}:calls=(\\d+)`, "m").exec(await admin.info("commandstats"));
    return m ? Number(m[1]) : 0;
}

async function pair(): Promise<void> {
    const a = await store.acquire({ pool: "p" });
    assert.ok(a.ok, JSON.stringify(a));
    const r = await store.release(a.lease.id, "ok");
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal(r.lease.proxyId, a.lease.proxyId);
}

before(async () => {
    redis = await startRedis();
    admin = new Redis(redis.url);
    store = new RedisLeaseStore({
        url: redis.url,
        prefix: "egress:scripts:",
        log: createLogger({ level: "warn" }),
        viewIntervalMs: 60_000, // no VIEW script among the calls counted
    });
    assert.equal(await store.connect(5000), true);
    store.setMembers(
        ["m-0", "m-1"].map((id) => ({ id, pool: "p", eligible: true })),
        { p: { cooldownSeconds: 0 } },
    );
    await new Promise((r) => setTimeout(r, 200)); // the publication is one round trip after a microtask
});

after(async () => {
    await store?.close();
    admin?.disconnect();
    await redis?.cleanup();
});

test("scripts go as EVALSHA; a Redis that lost them gets each one again as EVAL, once", async () => {
    await pair(); // loads the acquire and release scripts
    await admin.script("FLUSH");
    await admin.config("RESETSTAT");
    await pair(); // NOSCRIPT for both, each answered by its EVAL
    assert.equal(await calls("eval"), 2, "one EVAL per script Redis had lost");
    await pair();
    await pair();
    assert.equal(await calls("eval"), 2, "no EVAL once Redis has the scripts again");
    assert.ok((await calls("evalsha")) >= 4, "later calls are EVALSHAs");
});

test("a script's error that is not NOSCRIPT is not retried as EVAL", async () => {
    await admin.config("RESETSTAT");
    // Redis answers an EVALSHA with a WRONGTYPE error from inside the script: the pool's sorted set is a string.
    await admin.set("egress:scripts:ready:p", "not a sorted set");
    await assert.rejects(store.acquire({ pool: "p" }), /WRONGTYPE/);
    assert.equal(await calls("eval"), 0);
    await admin.del("egress:scripts:ready:p");
});
