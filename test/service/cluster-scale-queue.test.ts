/**
 * The scale requests followers queue for the leader (src/state/cluster/scale-queue.ts) on a real
 * redis-server: only the lock's holder takes them, oldest first, each once; a request the leader cannot
 * accept stays queued, in order, for the next one; a follower whose store is down gets a StoreUnavailableError (the
 * route's 503 store_unavailable), never a hang.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type Redis from "ioredis";
import { CLUSTER_KEYS } from "../../src/state/cluster/records";
import type { QueuedScale, ScaleTaker } from "../../src/state/cluster/scale-queue";
import { StoreUnavailableError } from "../../src/state/redis/unavailable";
import type { TestRedis } from "../helpers/redis";
import { scaleQueueBench } from "../helpers/scale-queue";

import { waitFor } from "../helpers/harness";

const PREFIX = "egress:scaleq:";
let bench: Awaited<ReturnType<typeof scaleQueueBench>>;
let redis: TestRedis;
let raw: Redis;
const queue = (self: string) => bench.queue(self);
/** A leader whose journal knows none of the ids (the crash windows: cluster-scale-queue-crash.test.ts). */
const fresh = (apply: ScaleTaker["apply"]): ScaleTaker => ({ known: () => false, apply });
const holdLock = (id: string) => bench.holdLock(id);

before(async () => {
    bench = await scaleQueueBench(PREFIX);
    ({ redis, raw } = bench);
});
after(() => bench?.close());

test("only the lock's holder takes the queue: oldest first, each request once, under the id answered", async () => {
    const follower = await queue("f");
    const other = await queue("o");
    const leader = await queue("l");
    await holdLock("l");
    const a = await follower.enqueue("web", 3);
    const b = await follower.enqueue("web", 5);
    assert.notEqual(a.id, b.id);
    assert.deepEqual(await leader.peek(a.id), a, "visible before it is taken");

    const takenByOther: QueuedScale[] = [];
    other.lead(fresh((q) => takenByOther.push(q))); // not the lock's holder
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(takenByOther, [], "a replica without the lock takes nothing");
    await other.follow();

    const taken: QueuedScale[] = [];
    leader.lead(fresh((q) => taken.push(q)));
    await waitFor("both requests taken", () => taken.length === 2, 5000, 20);
    assert.deepEqual(
        taken.map((q) => [q.id, q.replicas, q.via]),
        [
            [a.id, 3, "f"],
            [b.id, 5, "f"],
        ],
    );
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(taken.length, 2, "each request once");
    assert.equal(await leader.peek(a.id), undefined, "gone from the queue once taken");
    await leader.follow();
});

test("requests the leader cannot accept (it stops) stay queued, in order, for the next leader", async () => {
    const follower = await queue("f2");
    const stopping = await queue("s");
    await holdLock("s");
    const a = await follower.enqueue("web", 2);
    const b = await follower.enqueue("web", 4);
    let tries = 0;
    stopping.lead(
        fresh(() => {
            tries++;
            throw new Error("the service is stopping");
        }),
    );
    await waitFor("a try", () => tries > 0, 5000, 20);
    await stopping.follow();
    // Stopped at the first refusal: b, applied before a, would lose to it on the next leader.
    assert.equal(tries, 1, "nothing behind a refused request is applied");
    const c = await follower.enqueue("web", 6);
    const listed = await raw.lrange(PREFIX + CLUSTER_KEYS.scaleRequests, 0, -1);
    assert.deepEqual(
        listed.map((r) => JSON.parse(r) as QueuedScale),
        [a, b, c],
        "still queued, unchanged, in their order, the newer one behind",
    );

    const next = await queue("n");
    await holdLock("n");
    const taken: string[] = [];
    next.lead(fresh((x) => taken.push(x.id)));
    await waitFor("the next leader takes them", () => taken.length === 3, 5000, 20);
    await next.follow();
    assert.deepEqual(taken, [a.id, b.id, c.id], "oldest first: the latest (6) wins for the pool");
    assert.equal(await raw.llen(PREFIX + CLUSTER_KEYS.scaleRequests), 0, "removed once applied");
});

test("a follower whose store is down: StoreUnavailableError at once, and queuing works again after", async () => {
    const follower = await queue("f3");
    await redis.kill();
    const t0 = Date.now();
    await assert.rejects(follower.enqueue("web", 4), StoreUnavailableError);
    assert.ok(Date.now() - t0 < 2500, `answered within the command timeout (${Date.now() - t0} ms)`);
    await redis.start();
    const q = await waitFor(
        "the follower to queue again",
        () => follower.enqueue("web", 4).catch(() => undefined),
        15_000,
        200,
    );
    assert.equal((await follower.peek(q.id))?.replicas, 4);
});
