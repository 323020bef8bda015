/**
 * The repair back-off with replicas (src/service/control/heal/history.ts, store-history.ts) on a real
 * redis-server, two leaders' worth in one process: a back-off one leader wrote is honoured by the next
 * (the member is not repaired before retryAt after a hand-over, and is once it passes), members that
 * left the fleet are forgotten in the store, and with Redis down a round repairs nothing and throws
 * nothing, and everything written meanwhile reaches the store once it is back. The reconciler is real;
 * the scaler stands in (which replica leads is the test's to say), the liveness hook says web-0 is gone.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import Redis from "ioredis";
import { createLogger } from "../../src/log/logger";
import type { PoolConfig } from "../../src/model";
import { CLUSTER_KEYS } from "../../src/state/cluster/records";
import { Reconciler } from "../../src/service/control/heal/reconciler";
import { StoreHealHistory } from "../../src/service/control/heal/store-history";
import { NotAcceptingError, type Scaler } from "../../src/service/control/scaler";
import type { Operation } from "../../src/state/operations/operation";
import { startRedis, TestRedis } from "../helpers/redis";

import { localMember } from "../helpers/members";
import { waitFor } from "../helpers/harness";

const PREFIX = "egress:heal:";
const KEY = PREFIX + CLUSTER_KEYS.heal;
const log = createLogger({ level: "silent" });
const member = (i: number) => localMember(i);
let members = [member(0), member(1)];
let gone = new Set(["web-0"]);
let now = Date.parse("2026-01-01T00:00:00Z");
let leader = "";

let redis: TestRedis;
let raw: Redis;
const stores: StoreHealHistory[] = [];

/** One replica's reconciler; `shared: false` is the memory mode (the back-off only in this process). */
function replica(self: string, shared = true) {
    const healed: string[][] = [];
    const scaler = {
        busy: () => false,
        accepts: () => leader === self,
        heal: (targets: Record<string, unknown>) => {
            if (leader !== self) throw new NotAcceptingError("starting"); // a follower's scaler is paused
            healed.push(Object.keys(targets));
            return { id: `op-${healed.length}`, members: Object.keys(targets) };
        },
    } as unknown as Scaler;
    const store = shared ? new StoreHealHistory({ url: redis.url, prefix: PREFIX }) : undefined;
    if (store) stores.push(store);
    const r = new Reconciler({
        intervalMs: 0,
        log,
        scaler,
        historyStore: store,
        members: () => members,
        health: () => undefined,
        pools: () => [{ name: "web", replaceUnhealthyAfterSeconds: 300, maxSurge: 1 } as PoolConfig],
        providers: () => [{ provider: "local", kind: "local", ok: true, targets: [] }],
        goneChecks: () =>
            new Map([["local", async () => new Map([...gone].map((id) => [id, "the process is gone"] as const))]]),
        now: () => now,
    });
    return { r, healed };
}
const failedHeal = (ids: string[]) =>
    ({ id: "op-x", kind: "heal", status: "failed", members: ids, desired: {} }) as unknown as Operation;
const stored = async (id: string) => {
    const v = await raw.hget(KEY, id);
    return v ? (JSON.parse(v) as { failures: number; retryAt?: number }) : undefined;
};

before(async () => {
    redis = await startRedis();
    raw = new Redis(redis.url);
    raw.on("error", () => undefined); // Redis is killed on purpose below
});
after(async () => {
    for (const s of stores) s.close();
    raw?.disconnect();
    await redis?.cleanup();
});

let a: ReturnType<typeof replica>, b: ReturnType<typeof replica>;

test("a back-off written by one leader is honoured by the next: no repair before retryAt after a hand-over", async () => {
    a = replica("replica-a");
    b = replica("replica-b");
    leader = "replica-a";
    await a.r.runOnce();
    assert.deepEqual(a.healed, [["web-0"]]);
    a.r.settled(failedHeal(["web-0"])); // the repair failed: 1 min back-off
    const retryAt = now + 60_000;
    await waitFor("the back-off in the store", async () => (await stored("web-0"))?.retryAt === retryAt, 60_000, 25);

    // B followed meanwhile (its rounds decide nothing that runs), then takes over.
    await b.r.runOnce();
    leader = "replica-b";
    a.r.follow(); // start/leading.ts on the step-down
    now += 10_000;
    const decisions = await b.r.runOnce();
    assert.deepEqual(b.healed, [], "not repaired before retryAt");
    assert.equal(decisions[0]?.action, "skip");
    assert.deepEqual(
        decisions.map((d) => d.action === "skip" && [d.member, d.skip, d.until]),
        [["web-0", "backoff", retryAt]],
    );
    assert.deepEqual(b.r.status().backoff, [
        { member: "web-0", failures: 1, retryAt: new Date(retryAt).toISOString() },
    ]);

    // Without the store (memory mode) a new process knows nothing and repairs at once: what the store prevents.
    const alone = replica("replica-b", false);
    await alone.r.runOnce();
    assert.deepEqual(alone.healed, [["web-0"]]);

    now = retryAt;
    await b.r.runOnce();
    assert.deepEqual(b.healed, [["web-0"]], "repaired once retryAt passed");
    b.r.settled(failedHeal(["web-0"])); // failed again: 2 min, counted on from the first leader's failure
    await waitFor("two failures in the store", async () => (await stored("web-0"))?.failures === 2, 60_000, 25);
    assert.equal((await stored("web-0"))?.retryAt, now + 120_000);
});

test("members that left the fleet are forgotten in the store, by the leader only", async () => {
    await raw.hset(KEY, "web-7", JSON.stringify({ failures: 1, retryAt: now + 60_000 }));
    leader = "replica-a"; // a takes the lead back: it loads again (b wrote since)
    b.r.follow();
    await a.r.runOnce();
    // What b wrote is a's now; web-7 (not a member) is dropped by the same round.
    assert.deepEqual(
        a.r.status().backoff.map((x) => [x.member, x.failures]),
        [["web-0", 2]],
    );
    await waitFor("web-7 forgotten in the store", async () => (await stored("web-7")) === undefined, 60_000, 25);
    members = [member(1)];
    gone = new Set();
    await b.r.runOnce(); // a follower prunes nothing
    assert.equal((await stored("web-0"))?.failures, 2);
    await a.r.runOnce();
    await waitFor("web-0 forgotten in the store", async () => (await stored("web-0")) === undefined, 60_000, 25);
});

test("Redis down: a leader's round repairs nothing and throws nothing; what it settled meanwhile is written once Redis is back", async () => {
    members = [member(0), member(1)];
    gone = new Set(["web-1"]);
    leader = "replica-b"; // a new leadership: b must read the store before deciding
    a.r.follow();
    await redis.kill();
    assert.deepEqual(await b.r.runOnce(), []);
    assert.match(b.r.status().lastRound?.skipped ?? "", /repair back-off cannot be read or written in the store/);
    assert.deepEqual(b.healed, [["web-0"]], "nothing repaired while the back-off cannot be read");
    b.r.settled(failedHeal(["web-1"])); // e.g. an operation that settled during the outage: no throw

    await redis.start(); // no persistence: the store starts empty
    await waitFor(
        "a round to decide again",
        async () => ((await b.r.runOnce()).length > 0 ? true : undefined),
        15_000,
        200,
    );
    assert.equal((await stored("web-1"))?.failures, 1, "the back-off settled during the outage reached the store");
    assert.equal(b.r.status().lastRound?.decisions[0]?.action, "skip", "and web-1 backs off");
});
