/**
 * The cluster's health verdicts (src/service/cluster/verdicts.ts) on a real redis-server, two replicas'
 * worth in one process: the leader's probes decide and it publishes; the follower shows what it
 * published and mirrors each change into its fleet; only the lock's holder may publish; a follower that
 * cannot read keeps its last copy and says so; lease errors released anywhere count at the leader; a
 * follower that takes the lead carries on from the published verdicts without a transition; lease
 * outcomes (releases and block reports) on any replica reach the leader's rotation. The probe
 * function is the monitor's test seam (which members answer is the test's to say); Redis is real.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import Redis from "ioredis";
import { createLogger } from "../../src/log/logger";
import { HealthMonitor, type ProbeFn, type Transition } from "../../src/probes";
import { CLUSTER_KEYS } from "../../src/state/cluster/records";
import { ClusterVerdicts } from "../../src/service/cluster/verdicts";
import { RedisLeaseStore } from "../../src/service/store/redis-store";
import { startRedis, TestRedis } from "../helpers/redis";

import { localMember } from "../helpers/members";
import { waitFor } from "../helpers/harness";

const PREFIX = "egress:verdicts:";
const log = createLogger({ level: "silent" });
const member = (i: number) => localMember(i);
const MEMBERS = [member(0), member(1)];
/** Ports whose probes fail. */
const down = new Set<number>();
let probes = 0;
const probe: ProbeFn = async (o) => {
    probes++;
    return down.has(o.proxyPort) ? { ok: false, latencyMs: 1, error: "ECONNREFUSED" } : { ok: true, latencyMs: 2 };
};

let redis: TestRedis;
let raw: Redis;
const parts: {
    v: ClusterVerdicts;
    monitor: HealthMonitor;
    changes: [string, string][];
    transitions: Transition[];
    outcomes: Map<string, { blocked: number; total: number }>;
}[] = [];

function replica(self: string, intervalMs = 100) {
    const transitions: Transition[] = [];
    const monitor = new HealthMonitor({
        checkUrl: "http://127.0.0.1:1/v1/echo",
        intervalMs,
        probe,
    });
    const outcomes = new Map<string, { blocked: number; total: number }>();
    const onOutcomes = (id: string, blocked: number, total: number) => {
        const was = outcomes.get(id) ?? { blocked: 0, total: 0 };
        outcomes.set(id, { blocked: was.blocked + blocked, total: was.total + total });
    };
    const v = new ClusterVerdicts({ url: redis.url, prefix: PREFIX, self, monitor, log, intervalMs: 100, onOutcomes });
    const changes: [string, string][] = [];
    v.subscribe((id, state) => changes.push([id, state]));
    monitor.subscribe({ onTransition: (t) => (transitions.push(t), v.changed()) });
    v.setMembers(MEMBERS);
    const part = { v, monitor, changes, transitions, outcomes };
    parts.push(part);
    return part;
}
const holdLock = (id: string) =>
    raw.set(PREFIX + CLUSTER_KEYS.leader, JSON.stringify({ id, token: 1, since: new Date().toISOString() }));

before(async () => {
    redis = await startRedis();
    raw = new Redis(redis.url);
    raw.on("error", () => undefined); // Redis is killed on purpose in the second test
});
after(async () => {
    for (const p of parts) {
        await p.monitor.stop();
        await p.v.close();
    }
    raw?.disconnect();
    await redis?.cleanup();
});

test("the follower shows the leader's verdicts and never probes; only the lock's holder publishes", async () => {
    const leader = replica("replica-a");
    const follower = replica("replica-b");
    await Promise.all([leader.v.start(), follower.v.start()]);
    assert.equal(follower.v.get("web-0"), undefined, "nothing published yet: unknown");
    assert.equal(follower.v.status().stale, "no leader has published health verdicts yet");

    await holdLock("replica-a");
    await leader.v.lead();
    await waitFor(
        "the follower to show web-0 and web-1 healthy",
        () => MEMBERS.every((m) => follower.v.get(m.id)?.state === "healthy"),
        60_000,
        25,
    );
    assert.deepEqual(follower.v.status().decidedBy, "replica-a");
    assert.equal(follower.v.status().self, false);
    assert.deepEqual(leader.v.status(), { decidedBy: "replica-a", self: true });
    assert.deepEqual(follower.changes.sort(), [
        ["web-0", "healthy"],
        ["web-1", "healthy"],
    ]);
    assert.equal(follower.monitor.probing, false);
    assert.equal(follower.transitions.length, 0, "the follower decided nothing");

    // The leader marks web-1 unhealthy; the follower shows it, with the leader's error, and tells its fleet.
    const started = Date.now();
    down.add(MEMBERS[1].port);
    await waitFor(
        "the follower to show web-1 unhealthy",
        () => follower.v.get("web-1")?.state === "unhealthy",
        60_000,
        25,
    );
    assert.ok(Date.now() - started < 2_000, `within 2 s (${Date.now() - started} ms)`);
    assert.equal(follower.v.get("web-1")?.lastError, "ECONNREFUSED");
    assert.deepEqual(follower.changes.at(-1), ["web-1", "unhealthy"]);

    // A replica that does not hold the lock cannot overwrite what the leader published.
    const impostor = replica("replica-c");
    await impostor.v.start();
    await impostor.v.lead(); // it believes it leads; Redis says otherwise
    await new Promise((r) => setTimeout(r, 400));
    const by = await raw.hget(PREFIX + CLUSTER_KEYS.health, "by");
    assert.equal(by, "replica-a");
    await impostor.v.follow();
});

test("a follower that cannot read keeps its last view and says why; it reads again when Redis is back", async () => {
    const [, follower] = parts;
    assert.equal(follower.v.get("web-0")?.state, "healthy");
    await redis.kill();
    await waitFor(
        "the follower to say it cannot read",
        () => follower.v.status().stale?.startsWith("cannot read"),
        60_000,
        25,
    );
    assert.equal(follower.v.get("web-0")?.state, "healthy", "the last view is kept");
    assert.equal(follower.v.get("web-1")?.state, "unhealthy");
    await redis.start();
    await holdLock("replica-a"); // no persistence in this Redis: the lock (and every key) went with it
    await waitFor("the follower to read again", () => follower.v.status().stale === undefined, 15_000, 50);
});

test("lease errors released on any replica count at the leader; a new leader carries on from the verdicts", async () => {
    const [leader, follower] = parts;
    down.clear();
    await waitFor(
        "web-1 healthy again on the follower",
        () => follower.v.get("web-1")?.state === "healthy",
        10_000,
        25,
    );
    // Two lease errors with no probe between them mark a member unhealthy (failure threshold 2): slow
    // the leader's rounds so none comes between, then count errors as the release script does.
    await leader.monitor.stop(); // stands for a long probe interval; the leader still leads and publishes
    await raw.hincrby(PREFIX + "err", "web-0", 2);
    await waitFor(
        "the leader to count the lease errors",
        () => leader.v.get("web-0")?.state === "unhealthy",
        5_000,
        25,
    );
    await waitFor("the follower to show it", () => follower.v.get("web-0")?.state === "unhealthy", 5_000, 25);

    // The leader steps down; the follower takes the lock and leads from the published verdicts.
    await leader.v.follow();
    const probesBefore = probes;
    const transitionsBefore = follower.transitions.length;
    await holdLock("replica-b");
    await follower.v.lead();
    assert.equal(follower.v.get("web-0")?.state, "unhealthy", "carried on, not back to unknown");
    assert.equal(follower.v.get("web-1")?.state, "healthy");
    assert.equal(follower.monitor.probing, true);
    await waitFor("the new leader to probe", () => probes > probesBefore, 60_000, 25);
    // web-1 stays healthy (no transition); web-0 recovers through two good probes, as it would have at the old leader.
    await waitFor("web-0 healthy under the new leader", () => follower.v.get("web-0")?.state === "healthy", 5_000, 25);
    const moved = follower.transitions.slice(transitionsBefore).map((t) => `${t.id}:${t.from}->${t.to}`);
    assert.deepEqual(moved, ["web-0:unhealthy->healthy"]);
    assert.equal(leader.monitor.probing, false, "the old leader stopped probing");
    await waitFor(
        "the old leader to show the new leader's verdicts",
        () => leader.v.status().decidedBy === "replica-b",
        60_000,
        25,
    );
});

test("outcomes released or reported on any replica's store reach the leader's rotation, counted once", async () => {
    const [, leader] = parts; // replica-b leads since the test before
    const store = new RedisLeaseStore({ url: redis.url, prefix: PREFIX, log, targetCooldownSeconds: 0 });
    try {
        assert.equal(await store.connect(5000), true);
        store.setMembers(
            MEMBERS.map((m) => ({ id: m.id, pool: m.pool, zone: m.zone, eligible: true })),
            { web: { cooldownSeconds: 0 } },
        );
        await new Promise((r) => setTimeout(r, 200)); // the publication is one round trip after a microtask
        const before = leader.outcomes.get("web-0") ?? { blocked: 0, total: 0 };
        for (const outcome of ["blocked", "ok", "blocked"] as const) {
            const got = await store.acquire({ pool: "web", exclude: ["web-1"] });
            assert.ok(got.ok, JSON.stringify(got));
            assert.equal((await store.release(got.lease.id, outcome)).ok, true);
        }
        assert.ok((await store.reportBlocked("web-0", "example.com")) !== undefined);
        await waitFor(
            "the leader to count web-0's outcomes",
            () => (leader.outcomes.get("web-0")?.total ?? 0) >= before.total + 4,
            5_000,
            25,
        );
        await new Promise((r) => setTimeout(r, 300)); // a few more rounds: nothing counted twice
        assert.deepEqual(leader.outcomes.get("web-0"), { blocked: before.blocked + 3, total: before.total + 4 });
        assert.equal(parts[0].outcomes.size, 0, "the follower counts nothing");
    } finally {
        await store.close();
    }
});

test("the leader's lifecycle notes (a drain, a failed operation naming a member) reach the followers with its verdicts", async () => {
    const leader = replica("replica-n");
    const follower = replica("replica-m");
    await Promise.all([leader.v.start(), follower.v.start()]);
    const drainingUntil = Date.now() + 60_000;
    const opError = { message: "operation op_1 failed: web-1 could not be created", at: Date.now() };
    const notes = new Map<string, { drainingUntil?: number; opError?: typeof opError }>([
        ["web-0", { drainingUntil }],
        ["web-1", { opError }],
    ]);
    leader.v.publishNotes(() => notes);
    await holdLock("replica-n");
    await leader.v.lead();
    await waitFor(
        "the follower to show the leader's notes",
        () =>
            follower.v.note("web-0")?.drainingUntil === drainingUntil &&
            follower.v.note("web-1")?.opError?.at === opError.at,
        60_000,
        25,
    );
    assert.deepEqual(follower.v.note("web-1"), { drainingUntil: undefined, opError });
    assert.equal(leader.v.note("web-0"), undefined, "the leader's own fleet holds its notes; it reads none back");

    // The drain ends on the leader: gone on the follower with the next publication.
    notes.delete("web-0");
    leader.v.changed();
    await waitFor("the drain gone on the follower", () => follower.v.note("web-0") === undefined, 60_000, 25);
    assert.equal(follower.v.note("web-1")?.opError?.message, opError.message, "the other note stays");
});
