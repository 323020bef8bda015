/**
 * The operation journal of replicas in the store (src/service/operations/store-journal.ts), on a real
 * redis-server: what one leader recorded is taken over by a replica of another EGRESS_HOME (a queued
 * request carried, a running operation interrupted); a replica that lost the lock cannot overwrite its
 * successor's journal; with the store away, changes go on, `flushed()` says the journal is behind, and
 * the journal lands by itself once the store is back; a home's journal file from before the move is
 * read while the store has none.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import Redis from "ioredis";
import { StoreJournal } from "../../src/service/operations/store-journal";
import { CLUSTER_KEYS } from "../../src/service/cluster/records";
import { OperationLog } from "../../src/service/operations/journal";
import { createLogger } from "../../src/log/logger";
import { startRedis, type TestRedis } from "../helpers/redis";
import { until } from "../helpers/processes";

const PREFIX = "egress:journaltest:";
const KEY = PREFIX + CLUSTER_KEYS.journal;
let redis: TestRedis;
let raw: Redis;
let dir: string;
const sinks: StoreJournal[] = [];
const log = createLogger({ level: "silent" });

const holdLock = (id: string) =>
    raw.set(PREFIX + CLUSTER_KEYS.leader, JSON.stringify({ id, token: 1, since: new Date().toISOString() }));
/** A replica's journal: `self` its id; `legacyFile` as start/parts.ts passes its home's old file. */
function journalOf(self: string, legacyFile?: string): OperationLog {
    const sink = new StoreJournal({ url: redis.url, prefix: PREFIX, self, log, legacyFile, retryMs: 100 });
    sinks.push(sink);
    return new OperationLog(sink);
}
const stored = async () => JSON.parse((await raw.get(KEY)) ?? "null") as { id: string; status: string }[] | null;

before(async () => {
    redis = await startRedis({ aof: true });
    raw = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    raw.on("error", () => undefined);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-journal-"));
});
after(async () => {
    for (const s of sinks) s.close();
    raw?.disconnect();
    await redis?.cleanup();
    fs.rmSync(dir, { recursive: true, force: true });
});

test("what a leader recorded is taken over by a replica of another home: the queued request carried, the running one interrupted", async () => {
    await raw.del(KEY);
    await holdLock("a");
    const a = journalOf("a");
    const running = a.create("scale", { web: 5 });
    a.update(running, { status: "running", startedAt: new Date().toISOString() });
    const queued = a.create("scale", { api: 2 }, "op_fromafollower");
    await a.flushed();
    assert.deepEqual(
        (await stored())?.map((o) => [o.id, o.status]),
        [
            [running.id, "running"],
            [queued.id, "queued"],
        ],
        "the store holds the leader's records, the newest state of each",
    );

    // Replica b (no file of a's home anywhere near it) leads next.
    await holdLock("b");
    const b = journalOf("b");
    const { carried, interrupted } = await b.recover();
    assert.deepEqual(
        carried.map((o) => o.id),
        [queued.id],
    );
    assert.deepEqual(
        interrupted.map((o) => o.id),
        [running.id],
    );
    assert.equal(b.get(running.id)?.status, "interrupted");
    await b.flushed();
    assert.equal((await stored())?.find((o) => o.id === running.id)?.status, "interrupted", "b wrote its takeover");
    assert.deepEqual(fs.readdirSync(dir), [], "no home holds a journal file");
});

test("a replica that lost the lock cannot overwrite its successor's journal; flushed() says so", async () => {
    await raw.del(KEY);
    await holdLock("old");
    const old = journalOf("old");
    old.create("scale", { web: 1 });
    await old.flushed();
    await holdLock("new");
    const next = journalOf("new");
    await next.recover();
    const mine = next.create("scale", { web: 4 });
    await next.flushed();

    const late = old.create("scale", { web: 9 }); // the old leader settles something after losing the lock
    await assert.rejects(old.flushed(), /no longer holds the stack's lock/);
    const ids = (await stored())!.map((o) => o.id);
    assert.ok(ids.includes(mine.id), "the new leader's record is there");
    assert.ok(!ids.includes(late.id), "the old leader's late record is not");
});

test("the store away: changes go on, flushed() rejects within seconds, and the journal lands by itself once it is back", async () => {
    await raw.del(KEY);
    await holdLock("s");
    const s = journalOf("s");
    s.create("scale", { web: 2 });
    await s.flushed();
    await redis.kill();
    const t0 = Date.now();
    const during = s.create("scale", { web: 3 }); // no throw, no wait: the request is answered
    assert.equal(s.get(during.id)?.status, "queued");
    await assert.rejects(s.flushed());
    const took = Date.now() - t0;
    assert.ok(took < 5000, `flushed() rejected after ${took} ms, not after a hang`);
    await redis.start();
    await until(
        "the journal written after the store came back",
        async () => ((await stored().catch(() => null)) ?? []).some((o) => o.id === during.id),
        15_000,
        100,
    );
    await s.flushed();
});

test("while the store has no journal, the home's file from before the move is read (requests queued across an upgrade are carried)", async () => {
    await raw.del(KEY);
    const file = path.join(dir, "legacy", "operations-journaltest.json");
    const before = new OperationLog(file);
    const q = before.create("scale", { web: 6 }, "op_queuedbeforeupgrade");
    await holdLock("u");
    const after = journalOf("u", file);
    const { carried } = await after.recover();
    assert.deepEqual(
        carried.map((o) => o.id),
        [q.id],
    );
    await after.flushed();
    assert.deepEqual(
        (await stored())?.map((o) => o.id),
        [q.id],
        "now in the store",
    );
    fs.rmSync(path.join(dir, "legacy"), { recursive: true });
});
