/**
 * A short store outage and the leader lock (src/service/cluster/cluster.ts, issue 35), on a real
 * redis-server with AOF (a restarted Redis keeps the lock and its expiry) and clusters in this process
 * with the production TTL of 5 s. The scale through `egress serve` replicas is
 * test/service/store-outage-leader.test.ts; here the worst moments are picked on purpose:
 * - Redis is killed just before the leader's next renewal was due, and started again 3 s later: the
 *   leader renews in time and never steps down;
 * - an operation asks the fence while Redis is away: the answer waits for Redis instead of "not leading"
 *   (the scaler would set the operation aside while this replica goes on leading, and nothing starts it);
 * - Redis away for longer than the lock lives: the fence answers false once the leader stepped down.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import Redis from "ioredis";
import { createLogger } from "../../src/log/logger";
import { Cluster } from "../../src/service/cluster/cluster";
import { CLUSTER_KEYS, LEADER_TTL_MS } from "../../src/state/cluster/records";
import { startRedis, type TestRedis } from "../helpers/redis";

import { sleep, waitFor } from "../helpers/harness";

let redis: TestRedis;
const started: Cluster[] = [];

before(async () => {
    redis = await startRedis({ aof: true });
});
after(async () => {
    await Promise.all(started.map((c) => c.stop()));
    await redis?.cleanup();
});

/** A replica's cluster of stack `prefix`, started, with the leadership changes it heard. */
async function replica(prefix: string) {
    const log = createLogger({ level: "silent" });
    const leading: boolean[] = [];
    const c = new Cluster({
        url: redis.url,
        prefix,
        self: { url: "http://127.0.0.1:1/", version: "test" },
        log,
        onLeading: (on) => leading.push(on),
    });
    started.push(c);
    await c.start();
    await waitFor("leading", () => c.isLeader(), 10_000, 25);
    return { c, leading };
}

/** Resolves at the next renewal of the lock `key` (its TTL jumps up). */
async function renewed(raw: Redis, key: string): Promise<void> {
    let last = await raw.pttl(key);
    for (;;) {
        await sleep(5);
        const now = await raw.pttl(key);
        if (now > last + 50) return;
        last = now;
    }
}

/** Resolves just before the leader's next renewal is due: the pace measured between two renewals. */
async function beforeNextRenewal(key: string): Promise<number> {
    const raw = new Redis(redis.url);
    try {
        await renewed(raw, key);
        const t0 = Date.now();
        await renewed(raw, key);
        const every = Date.now() - t0;
        await sleep(every - 40);
        return every;
    } finally {
        raw.disconnect();
    }
}

test("Redis killed just before a renewal was due and back 3 s later: the leader never steps down", async () => {
    const prefix = "egress:worst-phase:";
    const { c, leading } = await replica(prefix);
    const every = await beforeNextRenewal(prefix + CLUSTER_KEYS.leader);
    await redis.kill();
    await sleep(3000);
    await redis.start();
    await sleep(LEADER_TTL_MS);
    assert.deepEqual(leading, [true], `led throughout, never stepped down (renewing every ${every} ms)`);
    assert.ok(c.isLeader());
    assert.equal(await c.fence(), true);
});

test("a fence asked while Redis is away waits for it, and answers true once it is back", async () => {
    const { c, leading } = await replica("egress:fence-waits:");
    await redis.kill();
    let answer: boolean | undefined;
    const asked = c.fence().then((a) => (answer = a));
    await sleep(1500);
    assert.equal(answer, undefined, "no answer while Redis is away and the lock may still be ours");
    await redis.start();
    assert.equal(await asked, true);
    assert.deepEqual(leading, [true]);
});

test("a fence stops waiting when its caller stops, and answers false once the lock may have run out", async () => {
    const { c, leading } = await replica("egress:fence-gives-up:");
    await redis.kill();
    try {
        const stop = new AbortController();
        const stopped = c.fence(stop.signal);
        await sleep(300);
        stop.abort();
        assert.equal(await stopped, false, "the service stopping ends the wait");
        const t0 = Date.now();
        assert.equal(await c.fence(), false);
        assert.ok(Date.now() - t0 < LEADER_TTL_MS, "answered within the lock's lifetime");
        assert.deepEqual(leading, [true, false], "the leader stepped down: the lock may be another's");
    } finally {
        await redis.start();
    }
});
