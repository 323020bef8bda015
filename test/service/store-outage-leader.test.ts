/**
 * Short store outages change nothing (issue 35): two `egress serve` replicas of one stack on a real
 * redis-server (AOF on, as a production Redis that restarts keeps its keys) and a `local` pool. Redis is
 * killed in the middle of a scale, while the leader's engine is inside the update, and started again
 * after 1 s, then after 3 s. Each time the same replica leads before and after, it never stepped down,
 * and the operation ends `succeeded`: the leader renews its lock every tenth of its 5 s TTL and at once
 * when the connection is back (src/service/cluster/cluster.ts).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { endProcProject, procProject, type ProcProject, serve, type ServeProcess } from "../helpers/processes";
import { engineUpdating } from "../helpers/proc-scan";
import { startRedis, type TestRedis } from "../helpers/redis";
import { leaderOf } from "../helpers/replicas";
import { settled, sleep, waitFor } from "../helpers/harness";

let p: ProcProject;
let redis: TestRedis;
let replicas: ServeProcess[] = [];
const steppedDown = (svc: ServeProcess) => svc.logs.filter((l) => l.includes('"msg":"no longer leading"')).length;

before(async () => {
    redis = await startRedis({ aof: true });
    p = procProject("outage", {
        "egress:providers": { local: { type: "local" } },
        "egress:pools": [{ name: "web", provider: "local", replicas: 1, maxReplicas: 4, cooldownSeconds: 0 }],
    });
    const args = ["--store", redis.url];
    replicas = await Promise.all([serve(p, args), serve(p, args)]);
});
after(async () => {
    endProcProject(p);
    await redis?.cleanup();
});

for (const [outageMs, replicasTo] of [
    [1000, 2],
    [3000, 3],
] as const) {
    test(`Redis down for ${outageMs / 1000} s in the middle of a scale: the same leader, and the scale succeeds`, async () => {
        const leader = await leaderOf(replicas, 30_000);
        const downsBefore = steppedDown(leader);
        const r = await leader.call("PUT", "/v1/pools/web/replicas", { body: { replicas: replicasTo } });
        assert.equal(r.status, 202, JSON.stringify(r.body));
        const id = r.body.operation.id;
        // The scale's own engine run: the start-up convergence's may still be inside its update.
        const status = async () => (await leader.call("GET", `/v1/operations/${id}`)).body.operation.status;
        await waitFor("the scale to be running", async () => (await status()) === "running", 60_000, 50);
        await waitFor("the leader's engine inside the update", () => engineUpdating(leader.child.pid!), 60_000, 5);
        await redis.kill();
        await sleep(outageMs);
        await redis.start();
        const op = await settled(leader, id, 180_000);
        assert.equal(op.status, "succeeded", JSON.stringify(op));
        assert.equal(await leaderOf(replicas, 30_000), leader, "the replica that led before the outage leads after it");
        assert.equal(steppedDown(leader), downsBefore, "the leader never stepped down");
        const members = (await leader.call("GET", "/v1/proxies")).body.proxies as unknown[];
        assert.equal(members.length, replicasTo);
    });
}
