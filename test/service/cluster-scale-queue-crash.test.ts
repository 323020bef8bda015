/**
 * The scale queue's crash windows (src/state/cluster/scale-queue.ts) on a real redis-server, with the
 * operation journal on disk as the leader writes it: a request leaves the list only once a leader has
 * recorded it, so a leader killed after reading the queue loses nothing, and a request whose id the
 * journal already knows is removed without being applied a second time.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type Redis from "ioredis";
import { CLUSTER_KEYS } from "../../src/state/cluster/records";
import type { QueuedScale, ScaleTaker } from "../../src/state/cluster/scale-queue";
import { OperationLog } from "../../src/state/operations/journal";
import { scaleQueueBench } from "../helpers/scale-queue";

import { waitFor } from "../helpers/harness";

const PREFIX = "egress:scaleqcrash:";
const LIST = PREFIX + CLUSTER_KEYS.scaleRequests;
let bench: Awaited<ReturnType<typeof scaleQueueBench>>;
let raw: Redis;
let dir: string;
const queue = (self: string) => bench.queue(self);
const holdLock = (id: string) => bench.holdLock(id);
const listed = async () => (await raw.lrange(LIST, 0, -1)).map((r) => (JSON.parse(r) as QueuedScale).id);

/** What start/leading.ts does with the journal; `applied` counts the requests it records. */
function leaderOn(ops: OperationLog, applied: string[]): ScaleTaker {
    return {
        known: (id) => ops.get(id) !== undefined,
        apply: (q) => {
            applied.push(q.id);
            ops.create("scale", { [q.pool]: q.replicas }, q.id);
        },
    };
}

before(async () => {
    bench = await scaleQueueBench(PREFIX);
    raw = bench.raw;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-scaleq-"));
});
after(async () => {
    await bench?.close();
    fs.rmSync(dir, { recursive: true, force: true });
});

test("a leader killed after reading the queue: each request is recorded exactly once, by whichever leader", async () => {
    const journal = path.join(dir, "operations-crash.json");
    const follower = await queue("f");
    const dying = await queue("d");
    await holdLock("d");
    const a = await follower.enqueue("web", 5);
    const b = await follower.enqueue("api", 2);

    // Killed between the read and any journal write (the reply in flight): the old TAKE_SCALE_REQUESTS
    // had emptied the list by then, so both ids answered 404 and neither scale ever ran.
    await dying.read();
    assert.deepEqual(await listed(), [a.id, b.id], "a read takes nothing off the list");

    // Killed after recording a, before recording b, and before any removal.
    const first: string[] = [];
    const [readA] = await dying.read();
    leaderOn(new OperationLog(journal), first).apply(readA!.request);
    await dying.close();
    assert.deepEqual(await listed(), [a.id, b.id], "nothing removed before the leader's removal");

    // The next leader takes the journal over (start/leading.ts: ops.recover), then the queue.
    const ops = new OperationLog(journal);
    await ops.recover();
    const next = await queue("n");
    await holdLock("n");
    const second: string[] = [];
    next.lead(leaderOn(ops, second));
    await waitFor("the queue emptied", async () => (await raw.llen(LIST)) === 0, 5000, 20);
    await next.follow();

    assert.deepEqual(second, [b.id], "a, already in the journal, is not applied again; b is applied");
    assert.deepEqual([...first, ...second], [a.id, b.id], "each exactly once, oldest first");
    const onDisk = JSON.parse(fs.readFileSync(journal, "utf8")) as { id: string }[];
    assert.deepEqual(onDisk.map((o) => o.id).sort(), [a.id, b.id].sort(), "one operation each in the journal");
});

test("a request whose id the journal knows (its own operation, or folded into one) is removed, not applied", async () => {
    const ops = new OperationLog(path.join(dir, "operations-known.json"));
    const follower = await queue("f2");
    const leader = await queue("l2");
    await holdLock("l2");
    const own = await follower.enqueue("web", 3);
    const folded = await follower.enqueue("web", 4);
    const fresh = await follower.enqueue("web", 7);
    ops.create("scale", { web: 3 }, own.id);
    const into = ops.create("scale", { web: 4 });
    ops.update(into, { requestIds: [folded.id] });

    const applied: string[] = [];
    leader.lead(leaderOn(ops, applied));
    await waitFor("the queue emptied", async () => (await raw.llen(LIST)) === 0, 5000, 20);
    await new Promise((r) => setTimeout(r, 200));
    await leader.follow();
    assert.deepEqual(applied, [fresh.id], "only the unknown request is applied, once");
});

test("only the lock's holder removes: a leader that lost the lock leaves the queue to its successor", async () => {
    const follower = await queue("f3");
    const old = await queue("o3");
    await holdLock("o3");
    const q = await follower.enqueue("web", 9);
    const read = await old.read();
    await holdLock("s3"); // the lock moved on meanwhile
    assert.equal(await old.remove(read.map((r) => r.raw)), 0);
    assert.deepEqual(await listed(), [q.id]);
    assert.deepEqual(await old.read(), [], "nor does it read any more");
});
