/**
 * The other documented way to a Redis that fails over (docs/operations.md, "Redis"): HAProxy in front
 * of the data nodes (deploy/haproxy-redis.cfg, run as shipped but for ports and password), checking which
 * one says `role:master`, and `egress serve --store redis://…` pointed at HAProxy. Real processes: a
 * primary, 2 replicas and 3 sentinels (test/helpers/redis-sentinel.ts) promote a replica when the primary
 * is killed under lease load. Measured as for Sentinel URLs (test/helpers/redis-failover.ts): leasing
 * resumes by itself within 10 s, 503 store_unavailable meanwhile and no other 5xx; with
 * `--store-grant-replicas 1` no grant is lost and no member is ever in two leases.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { cli, endProcProject, procProject, ProcProject, serve, ServeProcess, untilHealthy } from "../helpers/processes";
import { startSentinelRedis, type TestSentinelRedis } from "../helpers/redis-sentinel";
import { killPrimaryUnderLoad, type Failover } from "../helpers/redis-failover";
import { startRedisHaproxy } from "../helpers/haproxy";
import { freeLoopbackPort } from "../helpers/net";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 5, maxReplicas: 5, cooldownSeconds: 0 }],
};
let p: ProcProject;
let redis: TestSentinelRedis;
let haproxy: Awaited<ReturnType<typeof startRedisHaproxy>>;
let svc: ServeProcess;
let url = "";

before(async () => {
    redis = await startSentinelRedis({ replicas: 2 });
    haproxy = await startRedisHaproxy({
        port: await freeLoopbackPort(),
        nodes: redis.nodes.map((n) => n.port),
        password: redis.password,
    });
    await haproxy.untilUp("redis_primary", 1);
    url = `redis://:${redis.password}@127.0.0.1:${haproxy.port}`;
    p = procProject("hpr", config);
    // A plain redis:// URL answers grants at once unless told: here each waits for a replica.
    svc = await serve(p, ["--store", url, "--store-grant-replicas", "1"]);
    await untilHealthy(svc, 5);
});
after(async () => {
    endProcProject(p);
    await haproxy?.cleanup();
    await redis?.cleanup();
});

const failover = (): Failover => ({
    svc,
    redis,
    doctor: () => cli(p, ["doctor", "--store", url]),
    doctorSays: /redis redis:\/\/:\*\*\*@127\.0\.0\.1:\d+ answers/,
    confirmedGrants: true,
    moreTimeline: () =>
        haproxy
            .log()
            .split("\n")
            .filter((l) => / is (UP|DOWN)/.test(l))
            .map((l) => `haproxy: ${l}`),
});

test("HAProxy sends egress to the primary alone: one server up, the replicas down", async () => {
    const rows = (await haproxy.stat()).filter((r) => r.pxname === "redis_primary" && r.svname.startsWith("redis-"));
    const primary = await redis.primary();
    assert.deepEqual(
        rows.map((r) => r.status),
        redis.nodes.map((n) => (n === primary ? "UP" : "DOWN")),
        JSON.stringify(rows),
    );
    const l = await svc.call("POST", "/v1/leases", { body: { pool: "web" } });
    assert.equal(l.status, 201, JSON.stringify(l.body));
    assert.equal(
        (await svc.call("POST", `/v1/leases/${l.body.lease.id}/release`, { body: { outcome: "ok" } })).status,
        200,
    );
    assert.ok(!svc.logs.join("\n").includes(redis.password), "the password is in no log line");
});

test(
    "the primary killed under lease load: Sentinel promotes a replica, HAProxy follows, leasing resumes within 10 s",
    { timeout: 120_000 },
    (t) => killPrimaryUnderLoad(t, "primary killed behind HAProxy", failover()),
);
