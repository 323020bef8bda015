/**
 * A member's lifecycle with replicas is the leader's (src/service/cluster/verdicts.ts publishes the
 * fleet's drains with the verdicts): two `egress serve` replicas of one stack on a real redis-server,
 * real member proxy processes. A scale-down whose member is leased drains it; the follower lists the
 * member `draining` with the leader's deadline and counts it in GET /v1/pools, as the leader does; the
 * lease released through the follower ends the drain, and both replicas list one member after it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { ProcProject, serve, ServeProcess } from "../helpers/processes";
import type { TestRedis } from "../helpers/redis";
import { withRedisProject } from "../helpers/redis-project";
import { leaderOf } from "../helpers/replicas";
import { waitFor } from "../helpers/harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [
        { name: "web", provider: "local", replicas: 2, maxReplicas: 4, cooldownSeconds: 0, drainSeconds: 300 },
    ],
};
let p: ProcProject;
let redis: TestRedis;

withRedisProject("life", config, (made) => ({ p, redis } = made));

type Listed = { id: string; health: string; lifecycle: string; drainingUntil?: string };
const proxies = async (svc: ServeProcess) => (await svc.call("GET", "/v1/proxies")).body.proxies as Listed[];
const pool = async (svc: ServeProcess) =>
    ((await svc.call("GET", "/v1/pools")).body.pools as any[]).find((x) => x.name === "web");

test("a follower lists the leader's drain: lifecycle, deadline and pool count; the release through it ends the drain", async () => {
    const args = ["--store", redis.url, "--probe-interval", "0.5"];
    const replicas = [await serve(p, args), await serve(p, args)];
    const leader = await leaderOf(replicas);
    const follower = replicas.find((r) => r !== leader)!;
    await waitFor(
        "2 healthy members on both replicas",
        async () =>
            (await Promise.all(replicas.map(proxies))).every(
                (l) => l.length === 2 && l.every((x) => x.health === "healthy"),
            ),
        120_000,
        100,
    );

    // Both members leased through the follower: the scale-down's member (web-1) must drain.
    const leases = [];
    for (let i = 0; i < 2; i++) {
        const l = await follower.call("POST", "/v1/leases", { body: { pool: "web", ttlSeconds: 600 } });
        assert.equal(l.status, 201, JSON.stringify(l.body));
        leases.push(l.body.lease);
    }
    const down = await follower.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 1 } });
    assert.equal(down.status, 202, JSON.stringify(down.body));

    const onLeader = await waitFor(
        "web-1 draining on the leader",
        async () => (await proxies(leader)).find((x) => x.id === "web-1" && x.lifecycle === "draining"),
        60_000,
        100,
    );
    const t0 = Date.now();
    const onFollower = await waitFor(
        "web-1 draining on the follower",
        async () => (await proxies(follower)).find((x) => x.id === "web-1" && x.lifecycle === "draining"),
        10_000,
        100,
    );
    console.log(`the follower showed the leader's drain ${Date.now() - t0} ms after the leader did`);
    assert.equal(onFollower.drainingUntil, onLeader.drainingUntil, "the leader's deadline");
    assert.equal((await pool(follower)).draining, 1, "the follower counts it");
    assert.equal((await pool(leader)).draining, 1);
    assert.equal((await proxies(follower)).find((x) => x.id === "web-0")?.lifecycle, "ready");

    // The crawler releases through the follower: the drain ends, the member goes, on both.
    const held = leases.find((l) => l.proxy.id === "web-1");
    assert.ok(held, `a lease on web-1: ${JSON.stringify(leases)}`);
    const rel = await follower.call("POST", `/v1/leases/${held.id}/release`, { body: { outcome: "ok" } });
    assert.equal(rel.status, 200, JSON.stringify(rel.body));
    await waitFor(
        "one member, none draining, on both replicas",
        async () =>
            (await Promise.all(replicas.map(proxies))).every(
                (l) => l.length === 1 && l[0].id === "web-0" && l[0].lifecycle !== "draining",
            ),
        120_000,
        250,
    );
    assert.equal((await pool(follower)).draining, 0);
});
