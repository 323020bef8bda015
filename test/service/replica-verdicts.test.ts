/**
 * Health with replicas is the leader's (src/service/cluster/verdicts.ts): two `egress serve` replicas of
 * one stack on a real redis-server, real member proxy processes.
 * - a member whose proxy process is killed: the leader's probes mark it unhealthy and the follower's
 *   GET /v1/proxies shows it unhealthy within seconds, with the leader's error; the follower leases only
 *   the healthy member;
 * - `kill -9` of the leader: the follower takes over from the verdicts last published, so across the
 *   failover the healthy member never shows anything but healthy and the dead one stays unhealthy.
 * - the dashboard's timeline is the leader's (fleet/store-timeline.ts): the follower's GET /v1/timeline
 *   shows the leader's samples, and after the failover the new leader continues the same timeline.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { ProcProject, proxyProcesses, serve, ServeProcess } from "../helpers/processes";
import type { TestRedis } from "../helpers/redis";
import { withRedisProject } from "../helpers/redis-project";
import { waitFor } from "../helpers/harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 2, maxReplicas: 4, cooldownSeconds: 0 }],
};
let p: ProcProject;
let redis: TestRedis;

withRedisProject("verd", config, (made) => ({ p, redis } = made));

type Listed = { id: string; health: string; lifecycle: string; lastError?: string };
const listed = async (svc: ServeProcess) => {
    const body = (await svc.call("GET", "/v1/proxies")).body;
    return { proxies: body.proxies as Listed[], verdicts: body.verdicts };
};
const selfOf = async (svc: ServeProcess) => (await svc.call("GET", "/v1/cluster")).body;
const timeline = async (svc: ServeProcess) =>
    (await svc.call("GET", "/v1/timeline")).body as { points: { at: string }[] };

test("a follower shows the leader's verdicts, and keeps them across a failover", async () => {
    const args = ["--store", redis.url, "--probe-interval", "0.5", "--timeline-interval", "1"];
    const replicas = [await serve(p, args), await serve(p, args)];
    const [leader, follower] = await waitFor(
        "one leader both replicas agree on",
        async () => {
            const v = await Promise.all(replicas.map(selfOf));
            if (!v[0].leader || v[0].leader.id !== v[1].leader?.id) return undefined;
            return v[0].self === v[0].leader.id ? [replicas[0], replicas[1]] : [replicas[1], replicas[0]];
        },
        15_000,
        100,
    );
    await waitFor(
        "2 healthy members on both replicas",
        async () =>
            (await Promise.all(replicas.map(listed))).every(
                (l) => l.proxies.length === 2 && l.proxies.every((x) => x.health === "healthy"),
            ),
        120_000,
        100,
    );

    // Kill one member's proxy: only the leader probes, so what the follower shows comes from the leader.
    const [dead, alive] = (await listed(leader)).proxies.map((x) => x.id).sort();
    const pid = proxyProcesses(p).get(`${p.stack}-${dead}`); // processes are named <stack>-<member>
    assert.ok(pid, `a process for ${dead}: ${[...proxyProcesses(p).keys()]}`);
    const killedAt = Date.now();
    process.kill(pid, "SIGKILL");
    const shown = await waitFor(
        `the follower to show ${dead} unhealthy`,
        async () => (await listed(follower)).proxies.find((x) => x.id === dead && x.health === "unhealthy"),
        10_000,
        50,
    );
    const tookMs = Date.now() - killedAt;
    console.log(`verdict: proxy kill -9 -> unhealthy on the follower in ${tookMs} ms`);
    assert.ok(tookMs < 5_000, `within a few seconds (took ${tookMs} ms)`);
    assert.equal(shown.lifecycle, "failed");
    assert.ok(shown.lastError, "the follower shows the leader's probe error");
    const onLeader = (await listed(leader)).proxies.find((x) => x.id === dead)!;
    assert.equal(onLeader.health, "unhealthy");
    const { verdicts } = await listed(follower);
    assert.equal(verdicts.decidedBy, (await selfOf(leader)).self);
    assert.equal(verdicts.self, false);
    // The follower leases only the healthy member (eligibility is the leader's, published to the store).
    for (let i = 0; i < 3; i++) {
        const g = await follower.call("POST", "/v1/leases", { body: { pool: "web", ttlSeconds: 30 } });
        assert.equal(g.status, 201, JSON.stringify(g.body));
        assert.equal(g.body.lease.proxy.id, alive);
        const rel = await follower.call("POST", `/v1/leases/${g.body.lease.id}/release`, { body: { outcome: "ok" } });
        assert.equal(rel.status, 200);
    }

    // The timeline is the leader's: the follower shows the same samples.
    const sampled = await waitFor(
        "the follower's timeline to be the leader's (2 samples or more)",
        async () => {
            const [l, f] = await Promise.all([timeline(leader), timeline(follower)]);
            return f.points.length >= 2 && JSON.stringify(l.points) === JSON.stringify(f.points) ? f : undefined;
        },
        10_000,
        100,
    );

    // kill -9 of the leader: the follower takes over from the published verdicts, no flap to `unknown`.
    leader.child.kill("SIGKILL");
    await leader.exited;
    const samples: Record<string, string>[] = [];
    let ledAt: number | undefined;
    await waitFor(
        "the follower to lead and show its own verdicts for 3 s",
        async () => {
            const l = await listed(follower);
            samples.push(Object.fromEntries(l.proxies.map((x) => [x.id, x.health])));
            if (l.verdicts.self) ledAt ??= Date.now();
            return ledAt !== undefined && Date.now() - ledAt > 3_000;
        },
        30_000,
        50,
    );
    assert.ok(samples.length > 20, `${samples.length} samples`);
    assert.ok(
        samples.every((s) => s[alive] === "healthy"),
        `the healthy member stayed healthy throughout: ${JSON.stringify(samples.map((s) => s[alive]))}`,
    );
    assert.ok(
        samples.every((s) => s[dead] === "unhealthy"),
        `the dead member stayed unhealthy throughout: ${JSON.stringify(samples.map((s) => s[dead]))}`,
    );
    await waitFor(
        "the new leader to continue the same timeline",
        async () => {
            const t = await timeline(follower);
            return t.points[0]?.at === sampled.points[0].at && t.points.length > sampled.points.length + 1;
        },
        10_000,
        100,
    );
    const metrics = await (await fetch(`${follower.url}/metrics`)).text();
    assert.match(metrics, /^egress_probes_total\{result="fail"\} [1-9]/m, "the new leader probes");
    // A graceful stop lets the new leader's converge finish, so the destroy in `after` finds no engine lock.
    follower.child.kill("SIGTERM");
    assert.equal(await follower.exited, 0);
});
