/**
 * An operation's event stream with replicas (GET /v1/operations/:id/events; the streams in the store,
 * src/state/operations/store-events.ts), with two `egress serve` replicas sharing one home, a real
 * redis-server and a `local` pool:
 * - a scale request queued through a follower streams there from its 202 to `succeeded`, with the
 *   engine's progress; the leader streams the same events, ids and all;
 * - a client on the follower keeps its stream through `kill -9` of the leader mid-scale: the events
 *   before the kill, then the next leader's `interrupted`, numbered on without a gap; one that
 *   reconnects with `Last-Event-ID` gets just the rest;
 * - the stream is in the store, with a TTL;
 * - Redis killed and restarted in the middle of an operation (AOF on): the follower's stream waits and
 *   goes on, numbered without a gap, and ends with the outcome: every one of the leader's progress
 *   events once it succeeded (the usual case), or the next leader's `interrupted` if the leader's lock
 *   ran out meanwhile.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import Redis from "ioredis";
import { endProcProject, procProject, ProcProject, serve, ServeProcess } from "../helpers/processes";
import { engineUpdating } from "../helpers/proc-scan";
import { startRedis, TestRedis } from "../helpers/redis";
import { leaderOf } from "../helpers/replicas";
import { ADMIN_TOKEN } from "../helpers/proc-project";
import { readSse, type SseEvent } from "../helpers/sse";
import { waitFor } from "../helpers/harness";

let p: ProcProject;
let redis: TestRedis;
let replicas: ServeProcess[] = [];
const args = () => ["--store", redis.url];

before(async () => {
    redis = await startRedis({ aof: true });
    p = procProject("opev", {
        "egress:providers": { local: { type: "local" } },
        "egress:pools": [{ name: "web", provider: "local", replicas: 1, maxReplicas: 6, cooldownSeconds: 0 }],
    });
    replicas = [await serve(p, args()), await serve(p, args())];
});
after(async () => {
    endProcProject(p);
    await redis?.cleanup();
});

const sse = (svc: ServeProcess, id: string, opts: { lastEventId?: string; onEvent?: (e: SseEvent) => void } = {}) =>
    readSse(svc.url, id, { ...opts, token: ADMIN_TOKEN });
const ids = (events: SseEvent[]) => events.map((e) => e.id);
const counting = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);
const members = async (svc: ServeProcess) => (await svc.call("GET", "/v1/proxies")).body.proxies.length;

test("a request queued through a follower streams there from its 202 to the end; the leader streams the same", async () => {
    const leader = await leaderOf(replicas);
    const follower = replicas.find((r) => r !== leader)!;
    await waitFor("the first member", async () => (await members(follower)) === 1, 120_000, 200);
    const r = await follower.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 2 } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const there = await sse(follower, r.body.operation.id);
    assert.equal(there.status, 200, there.raw);
    assert.deepEqual(ids(there.events), counting(1, there.events.length), "ids count up from 1 without gaps");
    assert.ok(
        there.events.some((e) => e.type === "progress" && e.data.kind === "resource-start"),
        "the engine's progress, from the leader through the store",
    );
    assert.equal(there.events.at(-1)!.type, "status");
    assert.equal(there.events.at(-1)!.data.status, "succeeded", there.raw.slice(-400));
    const onLeader = await sse(leader, r.body.operation.id);
    assert.deepEqual(onLeader.events, there.events, "the same events on the leader");

    const raw = new Redis(redis.url);
    try {
        const key = `egress:opev:events:${r.body.operation.id}`;
        assert.equal(await raw.xlen(key), there.events.length, "the stream is the store's");
        assert.ok((await raw.ttl(key)) > 0, "with a TTL");
    } finally {
        raw.disconnect();
    }
});

test("kill -9 of the leader mid-scale: a client on the follower keeps its stream, which ends with the next leader's interrupted", async () => {
    const leader = await leaderOf(replicas);
    const follower = replicas.find((r) => r !== leader)!;
    const r = await leader.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 4 } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const id = r.body.operation.id;
    let progressed = 0;
    const reading = sse(follower, id, { onEvent: (e) => void (e.type === "progress" && progressed++) });
    await waitFor("the leader's engine inside the update", () => engineUpdating(leader.child.pid!), 60_000, 5);
    await waitFor("a progress event on the follower's stream", () => progressed > 0, 30_000, 20);
    leader.child.kill("SIGKILL");
    await leader.exited;
    replicas = [follower];
    const got = await reading;
    const last = got.events.at(-1)!;
    assert.equal(last.type, "status");
    assert.equal(last.data.status, "interrupted", got.raw.slice(-600));
    assert.deepEqual(ids(got.events), counting(1, got.events.length), "one stream: numbered on by the next leader");
    assert.ok(progressed > 0 && got.events.filter((e) => e.type === "progress").length === progressed);

    const resumed = await sse(follower, id, { lastEventId: "2" });
    assert.deepEqual(resumed.events, got.events.slice(2), "after Last-Event-ID 2: the rest, once");
    const none = await sse(follower, id, { lastEventId: String(last.id) });
    assert.deepEqual(none.events, [], "after the last id: nothing");
    await waitFor("the survivor converged", async () => (await members(follower)) === 4, 180_000, 250);
});

test("Redis killed and restarted mid-operation: the follower's stream waits, goes on, and ends with the outcome", async () => {
    replicas.push(await serve(p, args()));
    const leader = await leaderOf(replicas);
    const follower = replicas.find((r) => r !== leader)!;
    const r = await leader.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 6 } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const id = r.body.operation.id;
    let progressed = 0;
    let seen = 0;
    const reading = sse(follower, id, {
        onEvent: (e) => {
            seen++;
            if (e.type === "progress") progressed++;
        },
    });
    await waitFor("a progress event on the follower's stream", () => progressed > 0, 60_000, 20);
    const atKill = seen;
    // Back at once (an outage as long as the restart): the leader's lock (5 s) normally outlives it.
    await redis.kill();
    await redis.start();
    const got = await reading;
    const last = got.events.at(-1)!;
    assert.equal(last.type, "status");
    assert.deepEqual(ids(got.events), counting(1, got.events.length), "numbered without a gap or a repeat");
    const progress = got.events.filter((e) => e.type === "progress").length;
    console.log(
        `stream through a Redis restart: ${atKill} events before the kill, ${got.events.length} in all (${progress} progress), ended ${last.data.status}`,
    );
    if (last.data.status === "succeeded") {
        const recorded = (await leader.call("GET", `/v1/operations/${id}`)).body;
        assert.equal(progress, recorded.events, "every progress event the leader recorded came through the store");
    } else {
        // A machine slow enough for the lock to run out in the restart: the next leader ends the operation,
        // and what the old one did after that is not its to add.
        assert.equal(last.data.status, "interrupted", got.raw.slice(-600));
        assert.ok(
            leader.logs.some((l) => l.includes('"msg":"no longer leading"')),
            "the leader lost its lock in the restart",
        );
    }
});
