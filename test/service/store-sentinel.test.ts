/**
 * `egress serve --store redis+sentinel://…` on a local-provider stack, as separate processes on real
 * redis-servers: a primary, 2 replicas and 3 sentinels (test/helpers/redis-sentinel.ts):
 * - it serves leases through the primary the sentinels name; doctor --store reaches it; the URL's
 *   password appears in no log line, no doctor output and no /v1/cluster answer;
 * - the primary killed (SIGKILL) under lease load: the sentinels promote a replica and leasing resumes
 *   by itself within 10 s, with 503 store_unavailable meanwhile and no other 5xx. Replication is
 *   asynchronous: a grant the dead primary had not passed on would be lost, and its member could be
 *   leased twice.
 *   With a sentinel URL grants wait for a replica (--store-grant-replicas 1), so none is lost and no member
 *   is ever in two leases;
 * - then the killed node restarted (a replica again), one sentinel killed and the promoted primary killed
 *   too: the two sentinels left (quorum 2) promote a replica, egress skips the dead sentinel, and leasing
 *   resumes the same way.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { cli, endProcProject, procProject, ProcProject, serve, ServeProcess, untilHealthy } from "../helpers/processes";
import { startSentinelRedis, waitReplicasOnline, type TestSentinelRedis } from "../helpers/redis-sentinel";
import { killPrimaryUnderLoad, type Failover } from "../helpers/redis-failover";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 5, maxReplicas: 5, cooldownSeconds: 0 }],
};
let p: ProcProject;
let redis: TestSentinelRedis;
let svc: ServeProcess;
/** What a failover of this test's Redis needs: egress reaches it through the sentinels. */
const failover = (): Failover => ({
    svc,
    redis,
    doctor: () => cli(p, ["doctor", "--store", redis.url]),
    doctorSays: /redis redis\+sentinel:\/\/:\*\*\*@127\.0\.0\.1:\d+,.*answers/,
    // A sentinel URL's grants wait for a replica (src/service/store/grant-replicas.ts).
    confirmedGrants: true,
});

before(async () => {
    redis = await startSentinelRedis({ replicas: 2 });
    p = procProject("snt", config);
    svc = await serve(p, ["--store", redis.url]);
    await untilHealthy(svc, 5);
});
after(async () => {
    endProcProject(p);
    await redis?.cleanup();
});

test(
    "leases through the primary the sentinels name; the URL's password shown nowhere",
    { timeout: 60_000 },
    async () => {
        const l = await svc.call("POST", "/v1/leases", { body: { pool: "web" } });
        assert.equal(l.status, 201, JSON.stringify(l.body));
        assert.equal(
            (await svc.call("POST", `/v1/leases/${l.body.lease.id}/release`, { body: { outcome: "ok" } })).status,
            200,
        );
        const primary = await redis.primary();
        assert.equal(primary, redis.nodes[0]);
        const cluster = await svc.call("GET", "/v1/cluster");
        assert.equal(cluster.status, 200, JSON.stringify(cluster.body));
        const doctor = cli(p, ["doctor", "--store", redis.url]);
        assert.match(doctor.stdout + doctor.stderr, /redis redis\+sentinel:\/\/:\*\*\*@127\.0\.0\.1:\d+,.*answers/);
        for (const [what, text] of [
            ["serve's logs", svc.logs.join("\n")],
            ["/v1/cluster", JSON.stringify(cluster.body)],
            ["doctor", doctor.stdout + doctor.stderr],
        ])
            assert.ok(!text.includes(redis.password), `the password is in ${what}`);
    },
);

test(
    "the primary killed under lease load: a replica is promoted, leasing resumes within 10 s, only 503s meanwhile",
    { timeout: 120_000 },
    (t) => killPrimaryUnderLoad(t, "primary killed", failover()),
);

test(
    "a sentinel killed, then the promoted primary: the two left promote a replica, leasing resumes",
    { timeout: 120_000 },
    async (t) => {
        // The node the first failover killed comes back (as systemd would restart it) and the sentinels
        // make it a replica: grants wait for one, so a primary with none left would answer only 503s.
        await redis.nodes[0].start();
        await waitReplicasOnline(await redis.primary(), 2, 60_000);
        await redis.sentinels[0].kill();
        const l = await svc.call("POST", "/v1/leases", { body: { pool: "web" } });
        assert.equal(l.status, 201, JSON.stringify(l.body));
        assert.equal(
            (await svc.call("POST", `/v1/leases/${l.body.lease.id}/release`, { body: { outcome: "ok" } })).status,
            200,
        );
        await killPrimaryUnderLoad(t, "first sentinel and primary killed", failover());
    },
);
