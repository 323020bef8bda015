/**
 * The operations' event streams in the store (src/state/operations/store-events.ts), on a real
 * redis-server: a leader's entries are numbered from 1 per operation, and the next leader, of another
 * home, numbers on from there (its `interrupted`); a replica that lost the lock adds nothing; an entry
 * is never added twice; with the store away entries wait and land in order once it is back; a stream
 * keeps its newest 1000 entries and expires a day after its last.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import Redis from "ioredis";
import { StoreJournal } from "../../src/state/operations/store-journal";
import { StoreEvents, STORE_STREAM_MAX, STORE_STREAM_TTL_S } from "../../src/state/operations/store-events";
import { CLUSTER_KEYS } from "../../src/state/cluster/records";
import { OperationLog } from "../../src/state/operations/journal";
import { createLogger } from "../../src/log/logger";
import { startRedis, type TestRedis } from "../helpers/redis";

import { waitFor } from "../helpers/harness";

const PREFIX = "egress:eventstest:";
let redis: TestRedis;
let raw: Redis;
const closing: { close(): void }[] = [];
const log = createLogger({ level: "silent" });

const holdLock = (id: string) =>
    raw.set(PREFIX + CLUSTER_KEYS.leader, JSON.stringify({ id, token: 1, since: new Date().toISOString() }));

/** A replica's operation log as start/parts.ts builds it with a store (operations/replicated-log.ts), leading. */
function replica(self: string): { ops: OperationLog; events: StoreEvents } {
    const o = { url: redis.url, prefix: PREFIX, self, log, retryMs: 100 };
    const journal = new StoreJournal(o);
    const events = new StoreEvents(o);
    closing.push(journal, events);
    return { ops: new OperationLog(journal, events), events };
}
const progress = (n: number) => ({ kind: "resource-start", urn: `urn:test:${n}`, at: new Date().toISOString() });

before(async () => {
    redis = await startRedis({ aof: true });
    raw = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    raw.on("error", () => undefined);
});
after(async () => {
    for (const c of closing) c.close();
    raw?.disconnect();
    await redis?.cleanup();
});

test("a leader's entries count up from 1; the next leader's interrupted numbers on; a replica that lost the lock adds nothing", async () => {
    await holdLock("a");
    const a = replica("a");
    const op = a.ops.create("scale", { web: 5 });
    a.ops.update(op, { status: "running", startedAt: new Date().toISOString() });
    for (let i = 0; i < 3; i++) a.ops.progress(op, progress(i) as never);
    await a.ops.flushed();
    await a.events.flushed();
    const stored = await a.events.read(op.id);
    assert.deepEqual(
        stored.map((e) => [e.id, e.type]),
        [
            [1, "status"],
            [2, "status"],
            [3, "progress"],
            [4, "progress"],
            [5, "progress"],
        ],
    );
    assert.equal((stored[1].data as { status: string }).status, "running");
    assert.equal((stored[4].data as { urn: string }).urn, "urn:test:2", "data as it was sent");
    assert.deepEqual(
        (await a.events.read(op.id, 3)).map((e) => e.id),
        [4, 5],
        "after an id: only the newer ones",
    );

    // b, of another home, leads next: the running operation is interrupted, numbered on from 5.
    await holdLock("b");
    const b = replica("b");
    await b.ops.recover();
    await b.events.flushed();
    // a, which lost the lock, still reports progress of its cut-off run: refused by the store.
    a.ops.progress(op, progress(9) as never);
    await a.events.flushed();
    const after = await b.events.read(op.id, 5);
    assert.deepEqual(
        after.map((e) => [e.id, e.type, (e.data as { status?: string }).status]),
        [[6, "status", "interrupted"]],
        "one entry after a's: b's interrupted, and none of a's late progress",
    );
    assert.deepEqual(await b.events.last(op.id), after[0]);
});

test("an entry is added once, even when it is sent again (a retry after a lost reply)", async () => {
    await holdLock("d");
    const { events } = replica("d");
    events.append("op_twice", 1, "status", { status: "queued" });
    await events.flushed();
    events.append("op_twice", 1, "status", { status: "queued" }); // the same entry of this process again
    events.append("op_twice", 2, "status", { status: "running" });
    await events.flushed();
    events.append("op_twice", 2, "status", { status: "running" });
    await events.flushed();
    assert.deepEqual(
        (await events.read("op_twice")).map((e) => [e.id, (e.data as { status: string }).status]),
        [
            [1, "queued"],
            [2, "running"],
        ],
    );
});

test("the store away: entries wait, and land in order once it is back", async () => {
    await holdLock("s");
    const { ops, events } = replica("s");
    const op = ops.create("scale", { web: 2 });
    await events.flushed();
    await redis.kill();
    ops.update(op, { status: "running" }); // no throw, no wait
    for (let i = 0; i < 5; i++) ops.progress(op, progress(i) as never);
    await assert.rejects(events.read(op.id), "a read while the store is away fails (the SSE waits and reads again)");
    await redis.start();
    await waitFor(
        "the entries written while the store was away",
        async () => (await events.read(op.id).catch(() => [])).length === 7,
        15_000,
        100,
    );
    const got = await events.read(op.id);
    assert.deepEqual(
        got.map((e) => e.id),
        [1, 2, 3, 4, 5, 6, 7],
    );
    assert.deepEqual(
        got.slice(2).map((e) => (e.data as { urn: string }).urn),
        [0, 1, 2, 3, 4].map((i) => `urn:test:${i}`),
        "in the order they happened",
    );
});

test(`a stream keeps its newest ${STORE_STREAM_MAX} entries and expires a day after its last`, async () => {
    await holdLock("m");
    const { events } = replica("m");
    for (let n = 1; n <= STORE_STREAM_MAX + 100; n++) events.append("op_long", n, "progress", { n });
    await events.flushed(10_000);
    const kept = await events.read("op_long");
    assert.equal(kept.length, STORE_STREAM_MAX);
    assert.equal(kept[0].id, 101, "the oldest went first");
    assert.equal(kept.at(-1)!.id, STORE_STREAM_MAX + 100);
    const ttl = await raw.ttl(events.key("op_long"));
    assert.ok(ttl > STORE_STREAM_TTL_S - 60 && ttl <= STORE_STREAM_TTL_S, `TTL ${ttl} s`);
});
