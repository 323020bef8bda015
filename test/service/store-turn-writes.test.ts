/**
 * How the Redis lease store writes its commands (store/turn-writes.ts), seen on the wire: a real
 * redis-server behind a loopback TCP relay that records what the store sends and can hold Redis'
 * replies back. A later turn's command goes out while the earlier one's reply is still held: ioredis'
 * auto-pipelining held it until that reply came (the convoy docs/bench.md measured under 16 clients).
 * That a turn's commands leave in one write is not checked here: the relay cannot tell one write from
 * three that reach it together.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startRedis, type TestRedis } from "../helpers/redis";
import { RedisRelay } from "../helpers/redis-relay";
import { createLogger } from "../../src/log/logger";
import { RedisLeaseStore } from "../../src/service/store";

/** The script calls in a chunk of RESP the store wrote. */
const scriptCalls = (chunk: string) => chunk.match(/\r\n(evalsha|eval)\r\n/gi)?.length ?? 0;

let redis: TestRedis;
let relay: RedisRelay;
let store: RedisLeaseStore;

before(async () => {
    redis = await startRedis();
    relay = new RedisRelay(redis.port);
    const port = await relay.listen();
    store = new RedisLeaseStore({
        url: `redis://:${redis.password}@127.0.0.1:${port}`,
        prefix: "egress:turn-writes:",
        log: createLogger({ level: "warn" }),
        targetCooldownSeconds: 0,
        commandTimeoutMs: 5000, // replies are held on purpose below; no 503 meanwhile
        viewIntervalMs: 60_000, // no VIEW script among the calls counted
    });
    assert.equal(await store.connect(5000), true);
    store.setMembers(
        ["m-0", "m-1", "m-2", "m-3"].map((id) => ({ id, pool: "p", eligible: true })),
        { p: { cooldownSeconds: 0 } },
    );
    await new Promise((r) => setTimeout(r, 200)); // the publication is one round trip after a microtask
    // Once each, so the scripts are loaded and later calls are plain EVALSHAs.
    const warm = await store.acquire({ pool: "p" });
    assert.ok(warm.ok, JSON.stringify(warm));
    assert.equal((await store.release(warm.lease.id, "ok")).ok, true);
});

after(async () => {
    await store?.close();
    relay?.close();
    await redis?.cleanup();
});

test("a later turn's command goes out while the earlier one's reply is still on its way", async () => {
    relay.hold();
    const from = relay.chunks.length;
    const first = store.acquire({ pool: "p" });
    await new Promise((r) => setTimeout(r, 50)); // a later turn; the first reply is held by the relay
    const second = store.acquire({ pool: "p" });
    const deadline = Date.now() + 2000;
    const sent = () => relay.chunks.slice(from).reduce((n, c) => n + scriptCalls(c), 0);
    while (sent() < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.equal(sent(), 2, "the second acquire was written before the first was answered");
    relay.flush();
    const [a, b] = await Promise.all([first, second]);
    assert.ok(a.ok && b.ok, JSON.stringify([a, b]));
    assert.notEqual(a.lease.proxyId, b.lease.proxyId, "a member is never in two live leases");
    for (const l of [a, b]) assert.equal((await store.release(l.lease.id, "ok")).ok, true);
});
