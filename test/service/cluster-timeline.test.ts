/**
 * The dashboard's timeline with replicas (src/service/fleet/store-timeline.ts) on a real redis-server,
 * two replicas' worth in one process: only the lock's holder appends, and what it sampled is what the
 * follower's GET /v1/timeline shows; a new leader continues the same timeline; with Redis down a read
 * answers the last samples read, flagged, and a sample is a gap, neither throws; both recover.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import express from "express";
import Redis from "ioredis";
import { createLogger } from "../../src/log/logger";
import { CLUSTER_KEYS } from "../../src/state/cluster/records";
import type { PoolCounts } from "../../src/service/fleet/fleet";
import { StoreTimeline } from "../../src/service/fleet/store-timeline";
import { dashboardRoutes } from "../../src/service/api/routes/dashboard";
import type { AppDeps } from "../../src/service/api/deps";
import { startRedis, TestRedis } from "../helpers/redis";

import { waitFor } from "../helpers/harness";

const PREFIX = "egress:timeline:";
const log = createLogger({ level: "silent" });
const counts = (healthy: number): Record<string, PoolCounts> => ({
    web: { actual: 3, healthy, unhealthy: 3 - healthy, unknown: 0, leased: 1, draining: 0 },
});

let redis: TestRedis;
let raw: Redis;
let holder = "";
const timelines: StoreTimeline[] = [];
let server: http.Server | undefined;

/** A replica's timeline; it leads while the test says the lock is its (the Lua script checks the real lock). */
function replica(self: string, healthy: () => number, leading = () => holder === self) {
    const t = new StoreTimeline({
        url: redis.url,
        prefix: PREFIX,
        self,
        leading,
        counts: () => counts(healthy()),
        log,
        intervalMs: 60_000, // the tests sample by hand
    });
    timelines.push(t);
    return t;
}
async function holdLock(id: string) {
    holder = id;
    await raw.set(PREFIX + CLUSTER_KEYS.leader, JSON.stringify({ id, token: 1, since: new Date().toISOString() }));
}
const healthyOf = (pts: { pools: Record<string, { healthy: number }> }[]) => pts.map((p) => p.pools.web.healthy);

before(async () => {
    redis = await startRedis();
    raw = new Redis(redis.url);
    raw.on("error", () => undefined); // Redis is killed on purpose below
});
after(async () => {
    server?.close();
    for (const t of timelines) await t.stop();
    raw?.disconnect();
    await redis?.cleanup();
});

let a: StoreTimeline, b: StoreTimeline, healthyA: number, healthyB: number;

test("the leader's samples are what the follower's GET /v1/timeline shows; only the lock's holder appends", async () => {
    healthyA = 1;
    healthyB = 0;
    a = replica("replica-a", () => healthyA);
    b = replica("replica-b", () => healthyB);
    await holdLock("replica-a");
    await Promise.all([a.start(), b.start()]); // a samples at start; b follows and samples nothing
    healthyA = 2;
    await a.sample();
    await b.sample();
    const fromA = await a.read();
    const fromB = await b.read();
    assert.deepEqual(healthyOf(fromB.points), [1, 2]);
    assert.deepEqual(fromB, fromA, "every replica shows the same samples");
    assert.equal(fromB.stale, undefined);
    assert.ok(Date.parse(fromB.points[1].at) >= Date.parse(fromB.points[0].at), "oldest first");

    // A replica that believes it leads but does not hold the lock appends nothing.
    const impostor = replica(
        "replica-c",
        () => 3,
        () => true,
    );
    await impostor.start();
    assert.deepEqual(healthyOf((await b.read()).points), [1, 2]);

    // Over HTTP, on the follower: the documented body, no stale flag.
    const deps = { auth: () => (_q: unknown, _s: unknown, next: () => void) => next(), timeline: b };
    const app = express();
    app.use(dashboardRoutes(deps as unknown as AppDeps));
    server = http.createServer(app);
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", () => r()));
    const res = await fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/v1/timeline`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-egress-stale"), null);
    const body = (await res.json()) as { intervalSeconds: number; points: { pools: { web: { healthy: number } } }[] };
    assert.equal(body.intervalSeconds, 60);
    assert.deepEqual(healthyOf(body.points), [1, 2]);
});

test("a new leader continues the same timeline", async () => {
    await holdLock("replica-b");
    healthyA = 9; // a no longer leads: its counts are not sampled
    healthyB = 3;
    await a.sample();
    await b.sample();
    assert.deepEqual(healthyOf((await a.read()).points), [1, 2, 3]);
    assert.deepEqual(healthyOf((await b.read()).points), [1, 2, 3]);
    // A restarted replica (a new connection, nothing in memory) reads the whole timeline too.
    const restarted = replica("replica-d", () => 0);
    await restarted.start();
    assert.deepEqual(healthyOf((await restarted.read()).points), [1, 2, 3]);
});

test("Redis down: a read answers the last samples, flagged, a sample is a gap; neither throws; both recover", async () => {
    await redis.kill();
    await b.sample(); // the leader's append fails: no throw
    const r = await a.read();
    assert.deepEqual(healthyOf(r.points), [1, 2, 3], "the last samples read");
    assert.match(r.stale ?? "", /cannot read the timeline from the store/);
    const port = (server!.address() as { port: number }).port;
    const res = await fetch(`http://127.0.0.1:${port}/v1/timeline`);
    assert.equal(res.status, 200, "never a 500");
    assert.match(res.headers.get("x-egress-stale") ?? "", /cannot be read/);
    assert.deepEqual(healthyOf(((await res.json()) as { points: never[] }).points), [1, 2, 3]);

    await redis.start(); // no persistence: the samples went with it, the timeline starts again
    await waitFor("the follower to read again", async () => (await a.read()).stale === undefined, 15_000, 100);
    await holdLock("replica-b");
    healthyB = 2;
    await waitFor(
        "the leader to append again",
        async () => {
            await b.sample();
            return (await a.read()).points.length > 0;
        },
        60_000,
        25,
    );
    assert.equal((await a.read()).points.at(-1)?.pools.web.healthy, 2);
});
