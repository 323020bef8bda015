/**
 * Replicas of one stack share one EGRESS_HOME (docs/operations.md, "Running replicas"): the journal,
 * the stack file and the writer lock a new leader takes over live there. With a real redis-server:
 * - two replicas from one home join (GET /v1/cluster lists both, with the same `home`, each with its
 *   gateway's URL);
 * - a replica of the same stack from another EGRESS_HOME (another checkout, as another host would be)
 *   is refused at start: exit 1, a message naming the running replicas and the rule, and it changed
 *   nothing (the cluster still lists the two, the members are the same).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { cli, killServices, procProject, ProcProject, serve, ServeProcess } from "../helpers/processes";
import { startRedis, TestRedis } from "../helpers/redis";
import { clusterOf, leaderOf } from "../helpers/replicas";
import { freeLoopbackPort } from "../helpers/net";
import { waitFor } from "../helpers/harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 1, maxReplicas: 3 }],
};
let redis: TestRedis;
let p: ProcProject;
let other: ProcProject;

before(async () => {
    redis = await startRedis();
    p = procProject("rh", config);
    other = procProject("rh", config); // the same stack name, its own directory and EGRESS_HOME
});
after(async () => {
    killServices();
    cli(p, ["destroy", "--yes", "--quiet"]);
    p.cleanup();
    other.cleanup();
    await redis?.cleanup();
});

const memberIds = async (svc: ServeProcess) =>
    ((await svc.call("GET", "/v1/proxies")).body.proxies as { id: string }[]).map((x) => x.id).sort();

test("a replica from another EGRESS_HOME is refused; replicas from one home join", { timeout: 180_000 }, async () => {
    const args = ["--store", redis.url];
    // Each with its own gateway, which its record in the cluster names (operators find them there).
    const gw = [await freeLoopbackPort(), await freeLoopbackPort()];
    const replicas = [
        await serve(p, [...args, "--gateway-port", String(gw[0])]),
        await serve(p, [...args, "--gateway-port", String(gw[1])]),
    ];
    const leader = await leaderOf(replicas);
    await waitFor("the member", async () => (await memberIds(leader)).length === 1, 120_000, 25);
    const view = await clusterOf(leader);
    assert.equal(view.replicas.length, 2);
    const homes = new Set<string>(view.replicas.map((r: { home: string }) => r.home));
    assert.equal(homes.size, 1, "one home for both");
    assert.match([...homes][0], /^[0-9a-f]{16}$/);
    const gateways = view.replicas.map((r: { gatewayUrl?: string }) => r.gatewayUrl).sort();
    assert.deepEqual(gateways, gw.map((port) => `http://127.0.0.1:${port}`).sort(), "each names its gateway");
    const before = await memberIds(leader);

    await assert.rejects(serve(other, args), (e: Error) => {
        assert.match(e.message, /exited with 1 before it was ready/);
        assert.match(e.message, /replicas of this stack already run from another EGRESS_HOME/);
        for (const r of view.replicas) assert.ok(e.message.includes(r.id), `names ${r.id}`);
        assert.ok(!e.message.includes(redis.password), "the store's password is not printed");
        return true;
    });
    const after = await clusterOf(leader);
    assert.deepEqual(
        after.replicas.map((r: { id: string }) => r.id).sort(),
        view.replicas.map((r: { id: string }) => r.id).sort(),
        "the refused replica never joined",
    );
    assert.equal(after.leader.id, view.leader.id, "the leader kept the lock");
    assert.deepEqual(await memberIds(leader), before, "nothing changed");
    for (const r of replicas) r.child.kill("SIGTERM");
    await Promise.all(replicas.map((r) => r.exited));
});
