/**
 * The stack's home key (src/service/cluster/home.ts) on a real redis-server, replicas' clusters in one
 * process (the refusal at start through `egress serve` is test/service/replica-home.test.ts):
 * - of two replicas from two EGRESS_HOMEs starting in the same moment, exactly one passes, every time;
 * - a refused start leaves the key to the home that runs the stack;
 * - the last replica of a home frees the stack when it stops, so another home may start at once;
 * - a running leader that finds the key held by another home (it could not renew it for three TTLs and
 *   replicas from another home took the stack) steps down and gives the lock up, says so once, and leads
 *   again once the key is free.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import Redis from "ioredis";
import { createLogger } from "../../src/log/logger";
import { Cluster } from "../../src/service/cluster/cluster";
import { CLUSTER_KEYS } from "../../src/state/cluster/records";
import { ForeignHomeError } from "../../src/service/cluster/home";
import { startRedis, TestRedis } from "../helpers/redis";

import { waitFor } from "../helpers/harness";

const TTL = 600;
let redis: TestRedis;
let raw: Redis;
const started: Cluster[] = [];

before(async () => {
    redis = await startRedis();
    raw = new Redis(redis.url);
});
after(async () => {
    await Promise.all(started.map((c) => c.stop()));
    raw?.disconnect();
    await redis?.cleanup();
});

/** A replica's cluster of stack `prefix` from home `home`, with its log lines kept. */
function replica(prefix: string, home: string, lines: { msg: string }[] = []) {
    const log = createLogger({ level: "info", destination: { write: (s: string) => void lines.push(JSON.parse(s)) } });
    const leading: boolean[] = [];
    const c = new Cluster({
        url: redis.url,
        prefix,
        self: { url: `http://127.0.0.1:1/${home}`, version: "test", home },
        log,
        ttlMs: TTL,
        onLeading: (on) => leading.push(on),
    });
    return { c, leading, lines };
}

test("of two homes starting at once exactly one passes, and a refusal leaves the key alone", async () => {
    for (let round = 0; round < 25; round++) {
        const prefix = `egress:race-${round}:`;
        const a = replica(prefix, "home-a").c;
        const b = replica(prefix, "home-b").c;
        const results = await Promise.allSettled([a.assertOneHome(), b.assertOneHome()]);
        const passed = results.filter((r) => r.status === "fulfilled");
        assert.equal(passed.length, 1, `round ${round}: one of the two passes`);
        const refused = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
        assert.ok(refused.reason instanceof ForeignHomeError, String(refused.reason));
        const winner = results[0].status === "fulfilled" ? "home-a" : "home-b";
        assert.match(refused.reason.message, new RegExp(`another EGRESS_HOME \\(home ${winner}\\)`));
        assert.equal(await raw.get(prefix + CLUSTER_KEYS.home), winner, "the key stays with the winner");
        const w = winner === "home-a" ? a : b;
        await w.stop();
    }
});

test("the last replica of a home frees the stack when it stops; another home then starts at once", async () => {
    const prefix = "egress:move:";
    const one = replica(prefix, "home-a").c;
    const two = replica(prefix, "home-a").c;
    for (const c of [one, two]) {
        await c.assertOneHome();
        await c.start();
    }
    await one.stop();
    assert.equal(await raw.get(prefix + CLUSTER_KEYS.home), "home-a", "a replica of the home still runs");
    await assert.rejects(replica(prefix, "home-b").c.assertOneHome(), ForeignHomeError);
    await two.stop();
    assert.equal(await raw.get(prefix + CLUSTER_KEYS.home), null, "the last one freed it");
    const next = replica(prefix, "home-b").c;
    await next.assertOneHome();
    started.push(next);
    await next.start();
    await waitFor("home-b leads", async () => next.isLeader(), 5_000, 25);
});

test("a leader that finds another home holding the stack steps down, says so once, and leads again once free", async () => {
    const prefix = "egress:taken:";
    const r = replica(prefix, "home-a");
    await r.c.assertOneHome();
    started.push(r.c);
    await r.c.start();
    await waitFor("it leads", async () => r.c.isLeader(), 5_000, 25);

    // What the store looks like once the key ran out during an outage and a replica from home-b took it.
    await raw.set(prefix + CLUSTER_KEYS.home, "home-b", "PX", 60_000);
    // Wait for the step-down itself: on a loaded machine `isLeader()` can turn false a moment earlier, when
    // a late tick lets the lock's validity run out, before the tick that reads the home key has run.
    await waitFor("it steps down", async () => r.leading.at(-1) === false && !r.c.isLeader(), 5_000, 25);
    assert.deepEqual(r.leading, [true, false]);
    await waitFor("it gave the lock up", async () => (await raw.get(prefix + CLUSTER_KEYS.leader)) === null, 5_000, 25);
    await new Promise((res) => setTimeout(res, TTL * 2)); // several ticks while the other home holds it
    assert.equal(await raw.get(prefix + CLUSTER_KEYS.leader), null, "it does not take the lock again");
    const said = r.lines.filter((l) => /another EGRESS_HOME \(home-b\) took this stack/.test(l.msg));
    assert.equal(said.length, 1, "said once, not every tick");

    await raw.del(prefix + CLUSTER_KEYS.home);
    await waitFor("it leads again", async () => r.c.isLeader(), 5_000, 25);
    assert.equal(await raw.get(prefix + CLUSTER_KEYS.home), "home-a");
});
