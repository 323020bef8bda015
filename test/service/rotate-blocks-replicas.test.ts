/**
 * Rotation by blocks with replicas (docs/decisions/0052-rotate-blocks.md): two `egress serve` replicas of
 * one stack on a real redis-server, real local members. Leases released `blocked` through the follower
 * count at the leader (the store's per-member outcome counters, read by its ClusterVerdicts): the leader
 * rotates that member with reason `blocked`, and the follower decides nothing.
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
        {
            name: "web",
            provider: "local",
            replicas: 3,
            maxReplicas: 6,
            drainSeconds: 2,
            rotateOnBlocks: { ratio: 0.5, minOutcomes: 4, windowSeconds: 600 },
        },
    ],
};
let p: ProcProject;
let redis: TestRedis;

withRedisProject("rotb", config, (made) => ({ p, redis } = made));

const rotateOps = async (svc: ServeProcess) =>
    ((await svc.call("GET", "/v1/operations")).body.operations as any[]).filter((o) => o.kind === "rotate");

test("blocks released through the follower rotate the member at the leader (reason blocked)", async () => {
    const args = ["--store", redis.url, "--probe-interval", "0.5", "--rotate-interval", "0.5"];
    const replicas = [await serve(p, args), await serve(p, args)];
    const leader = await leaderOf(replicas);
    const follower = replicas.find((r) => r !== leader)!;
    await waitFor(
        "3 healthy members on both replicas",
        async () =>
            (
                await Promise.all(
                    replicas.map(
                        async (r) => ((await r.call("GET", "/v1/proxies?state=healthy")).body.proxies as any[]).length,
                    ),
                )
            ).every((n) => n === 3),
        120_000,
        200,
    );

    // The first member the follower leases is the one the site blocks; the others' leases end fine.
    let target: string | undefined;
    let blocked = 0;
    for (let i = 0; i < 40 && blocked < 4; i++) {
        const lease = await follower.call("POST", "/v1/leases", { body: { pool: "web" } });
        assert.equal(lease.status, 201, JSON.stringify(lease.body));
        const member = lease.body.lease.proxy.id as string;
        target ??= member;
        const outcome = member === target ? "blocked" : "ok";
        if (outcome === "blocked") blocked++;
        const released = await follower.call("POST", `/v1/leases/${lease.body.lease.id}/release`, {
            body: { outcome },
        });
        assert.equal(released.status, 200, JSON.stringify(released.body));
    }
    assert.equal(blocked, 4);

    const op = await waitFor(
        `the leader to rotate ${target}`,
        async () => (await rotateOps(leader)).find((o) => o.status === "succeeded" || o.status === "failed"),
        180_000,
        250,
    );
    assert.equal(op.status, "succeeded", op.error);
    assert.deepEqual(op.members, [target]);
    assert.equal(op.reasons[target!].reason, "blocked");
    assert.equal(op.rotations[0].detail, "4 of 4 outcomes blocked in the last 600 s (ratio 0.5)");
    const view = (await follower.call("GET", "/v1/pools")).body.pools[0].rotation;
    assert.equal(view.poolWideBlock, undefined);
    assert.ok(!follower.logs.some((l) => l.includes("rotating ")), "the follower queued no rotation of its own");
});
