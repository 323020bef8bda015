/**
 * The operation journal of replicas in the store (src/state/operations/store-journal.ts), on a real
 * redis-server: what one leader recorded is taken over by a replica of another EGRESS_HOME (a queued
 * request carried, a running operation interrupted); a replica that lost the lock cannot overwrite its
 * successor's journal; with the store away, changes go on, `flushed()` says the journal is behind, and
 * the journal lands by itself once the store is back; a home's journal file from before the move is
 * read while the store has none; on a connection shared with other parts (a replica's session), a value
 * written while the sender finishes its last write is sent without waiting for the next write.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import Redis from "ioredis";
import { StoreJournal } from "../../src/state/operations/store-journal";
import { CLUSTER_KEYS } from "../../src/state/cluster/records";
import { OperationLog } from "../../src/state/operations/journal";
import { createLogger } from "../../src/log/logger";
import { startRedis, type TestRedis } from "../helpers/redis";

import { waitFor } from "../helpers/harness";

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
const stored = async () =>
    JSON.parse((await raw.get(KEY)) ?? "null") as { id: string; status: string; error?: string }[] | null;

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
    await waitFor(
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

test("a value written in the same turn as the sender's last reply, at any point of it, lands without waiting for the next write", async () => {
    await raw.del(KEY);
    await holdLock("a");
    // One connection for the journal and "another part", as a replica's session shares it: the other
    // part's reply arrives in the same read as the journal's and resumes its caller in the same turn.
    const shared = new Redis(redis.url, { maxRetriesPerRequest: 0 });
    shared.on("error", () => undefined);
    try {
        const sink = new StoreJournal({ url: redis.url, prefix: PREFIX, self: "a", log, retryMs: 100, redis: shared });
        sinks.push(sink);
        const a = new OperationLog(sink);
        const op = a.create("scale", { web: 2 });
        await a.flushed();
        // The caller changes the operation `hops` microtasks after the other reply: one of them falls
        // between the sender's last look at what is pending and the end of its send.
        for (let hops = 0; hops <= 24; hops++) {
            const last = `step-${hops}`;
            process.kill(redis.pid()!, "SIGSTOP"); // both commands are then read, run and answered together
            let resumed = false;
            try {
                a.update(op, { error: `before-${hops}` });
                await new Promise((r) => setTimeout(r, 20));
                void shared.get("egress:journaltest:other").then(() => {
                    let chain: Promise<void> = Promise.resolve();
                    for (let i = 0; i < hops; i++) chain = chain.then(() => undefined);
                    void chain.then(() => {
                        resumed = true;
                        a.update(op, { error: last });
                    });
                });
                await new Promise((r) => setTimeout(r, 20));
            } finally {
                process.kill(redis.pid()!, "SIGCONT");
            }
            await waitFor("the other part's caller", () => resumed, 5_000, 5);
            // Nothing else is written now: the last value must land by itself.
            await waitFor(
                `the journal to hold ${last}`,
                async () => (await stored())?.find((o) => o.id === op.id)?.error === last,
                2_000,
                10,
            );
        }
    } finally {
        shared.disconnect();
    }
});
