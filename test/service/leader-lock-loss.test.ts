/**
 * A leader cut off from the store while its engine runs (Scaler.abandonRunning, start/leading.ts): two
 * `egress serve` replicas of one stack on a real redis-server, the leader's every connection through a
 * loopback relay the test cuts (a network partition of that replica only), real local members and the
 * real engine. The leader's engine is made to hang (the CLI and its plugins stopped with SIGSTOP), so a cancel cannot
 * end it: once the leader's lock may be another's it cancels, then ends the engine's processes after
 * `--engine-kill-grace`; the other replica takes the stack over, clears the dead run's Pulumi lock and
 * converges to the desired count the cut-off leader had recorded, and nothing is leaked. A leader cut off
 * while its scale-down drains a leased member starts no engine run after the drain.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { engineProcessesOf, engineUpdating, ProcProject, serve, ServeProcess, wedgeEngine } from "../helpers/processes";
import type { TestRedis } from "../helpers/redis";
import { RedisRelay } from "../helpers/redis-relay";
import { withRedisProject } from "../helpers/redis-project";
import { clusterOf, leaderOf } from "../helpers/replicas";
import { assertNothingLeaked } from "../helpers/restart-checks";
import { settled, waitFor } from "../helpers/harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [
        { name: "web", provider: "local", replicas: 1, maxReplicas: 8, cooldownSeconds: 0, drainSeconds: 600 },
    ],
};
let p: ProcProject;
let redis: TestRedis;
withRedisProject("lockloss", config, (made) => ({ p, redis } = made));

/** No operation of `svc` queued or running. */
const idle = async (svc: ServeProcess) =>
    !((await svc.call("GET", "/v1/operations")).body.operations as { status: string }[]).some(
        (o) => o.status === "running" || o.status === "queued",
    );
const said = (svc: ServeProcess, re: RegExp) => svc.entries.find((e) => re.test(String(e.msg ?? "")));

test("a leader cut off from the store mid-update ends its engine run; the next leader converges and nothing leaks", async () => {
    const relay = new RedisRelay(redis.port);
    after(() => relay.close());
    await relay.listen();
    const a = await serve(p, ["--store", relay.via(redis.url), "--engine-kill-grace", "3"]);
    await leaderOf([a]);
    await waitFor("the start-up convergence done", () => idle(a), 120_000, 100);
    const b = await serve(p, ["--store", redis.url]);
    assert.equal(await leaderOf([a, b]), a, "the first replica leads");
    const bId = (await clusterOf(b)).self;

    const put = await a.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 6 } });
    assert.equal(put.status, 202, JSON.stringify(put.body));
    const aPid = a.child.pid!;
    await waitFor("the leader's engine inside the update", () => engineUpdating(aPid), 60_000, 5);
    // The engine and its plugins stop answering (a step stuck in a provider, a wedged CLI): the update
    // cannot finish, and a cancel cannot end it either.
    const stuck = wedgeEngine(aPid);
    assert.ok(stuck.length >= 2, JSON.stringify(engineProcessesOf(aPid)));

    const cut = Date.now();
    relay.close();
    await waitFor("the other replica leads", async () => (await clusterOf(b)).leader?.id === bId, 20_000, 100);
    const newLeader = Date.now() - cut;
    await waitFor("the cut-off leader's engine ended", () => engineProcessesOf(aPid).length === 0, 30_000, 100).catch(
        (e) => {
            console.log(JSON.stringify(engineProcessesOf(aPid)));
            console.log(
                a.logs
                    .filter((l) => !/probe|request/.test(l))
                    .slice(-40)
                    .join("\n"),
            );
            throw e;
        },
    );
    const engineGone = Date.now() - cut;
    console.log(`cut at 0: new leader after ${newLeader} ms; the old leader's engine gone after ${engineGone} ms`);

    const abandoned = said(a, /lost the stack's lock while this operation ran/);
    assert.ok(abandoned, "the cut-off leader says it abandons the operation");
    assert.equal(abandoned.engineRunning, true, "its engine run was cancelled");
    assert.ok(said(a, /did not end in time: its processes were ended/), "and ended when the cancel did not");
    // Lock TTL (5 s) for the step-down, the grace (3 s), the supervisor's sweep: well under 20 s.
    assert.ok(engineGone < 20_000, `engine gone ${engineGone} ms after the cut`);

    await waitFor(
        "the new leader converged to 6",
        async () => {
            const pools = (await b.call("GET", "/v1/pools")).body.pools as { name: string; actual: number }[];
            return pools.find((x) => x.name === "web")?.actual === 6 && (await idle(b));
        },
        180_000,
        200,
    );
    const recovered = said(b, /stale lock/);
    assert.ok(recovered, "the new leader cleared the killed run's Pulumi lock");
    const members = await assertNothingLeaked(p, b, aPid, "after the take-over: ");
    assert.equal(members.length, 6);
    a.child.kill("SIGKILL");
    b.child.kill("SIGTERM");
    assert.equal(await b.exited, 0);
});

test("a leader cut off while its scale-down drains starts no engine run; the next leader drains and applies it", async () => {
    const relay = new RedisRelay(redis.port);
    after(() => relay.close());
    await relay.listen();
    const a = await serve(p, ["--store", relay.via(redis.url), "--engine-kill-grace", "3"]);
    await leaderOf([a]);
    await waitFor("the start-up convergence done", () => idle(a), 120_000, 100);
    const b = await serve(p, ["--store", redis.url, "--probe-interval", "0.5"]);
    assert.equal(await leaderOf([a, b]), a, "the first replica leads");
    const bId = (await clusterOf(b)).self;
    const three = await a.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 3 } });
    assert.equal((await settled(a, three.body.operation.id)).status, "succeeded");
    const healthy = async () =>
        ((await b.call("GET", "/v1/proxies")).body.proxies as { health: string }[]).filter(
            (x) => x.health === "healthy",
        ).length;
    await waitFor("3 healthy members", async () => (await healthy()) === 3, 60_000, 100);
    // Every member leased (through the other replica): the scale-down's member must drain.
    const leases: { id: string; proxy: { id: string } }[] = [];
    for (let i = 0; i < 3; i++) {
        const l = await b.call("POST", "/v1/leases", { body: { pool: "web", ttlSeconds: 600 } });
        assert.equal(l.status, 201, JSON.stringify(l.body));
        leases.push(l.body.lease);
    }
    // At once: the leader's view of leases granted elsewhere lags up to a second; the drain reads the store.
    const down = await a.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 2 } });
    assert.equal(down.status, 202, JSON.stringify(down.body));
    await waitFor(
        "the scale-down draining on the leader",
        async () => (await a.call("GET", `/v1/operations/${down.body.operation.id}`)).body.operation?.drain?.draining,
        60_000,
        100,
    ).catch(async (e) => {
        console.log(JSON.stringify((await a.call("GET", `/v1/operations/${down.body.operation.id}`)).body));
        console.log(
            a.logs
                .filter((l) => !/probe|request/.test(l))
                .slice(-15)
                .join("\n"),
        );
        throw e;
    });
    assert.deepEqual(engineProcessesOf(a.child.pid!), [], "no engine runs while it drains");

    relay.close();
    await waitFor("the other replica leads", async () => (await clusterOf(b)).leader?.id === bId, 20_000, 100);
    const abandoned = await waitFor(
        "the cut-off leader abandons its operation",
        async () => said(a, /lost the stack's lock while this operation ran/),
        60_000,
        25,
    );
    assert.equal(abandoned.engineRunning, false, "it was draining: no engine run to cancel");
    // Its drain ended with the abort; an engine run after it would show within moments.
    for (const end = Date.now() + 5000; Date.now() < end; await new Promise((r) => setTimeout(r, 100)))
        assert.deepEqual(engineProcessesOf(a.child.pid!), [], "the cut-off leader starts no engine run");
    assert.ok(said(a, /operation interrupted/), "its operation ends interrupted");

    // The new leader applies the stack's desired 2: it drains the same member until its lease ends.
    const held = leases.find((l) => l.proxy.id === "web-2");
    assert.ok(held, JSON.stringify(leases.map((l) => l.proxy.id)));
    await waitFor(
        "web-2 draining on the new leader",
        async () =>
            ((await b.call("GET", "/v1/proxies")).body.proxies as { id: string; lifecycle: string }[]).some(
                (x) => x.id === "web-2" && x.lifecycle === "draining",
            ),
        60_000,
        100,
    );
    const rel = await b.call("POST", `/v1/leases/${held.id}/release`, { body: { outcome: "ok" } });
    assert.equal(rel.status, 200, JSON.stringify(rel.body));
    await waitFor(
        "the new leader converged to 2",
        async () => {
            const pools = (await b.call("GET", "/v1/pools")).body.pools as { name: string; actual: number }[];
            return pools.find((x) => x.name === "web")?.actual === 2 && (await idle(b));
        },
        120_000,
        200,
    );
    assert.equal((await assertNothingLeaked(p, b, a.child.pid!, "after the drain: ")).length, 2);
    a.child.kill("SIGKILL");
    b.child.kill("SIGTERM");
    assert.equal(await b.exited, 0);
});
