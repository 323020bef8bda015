/**
 * `egress serve --store redis://…` on a local-provider stack, as separate processes on a real
 * redis-server (AOF on, so a Redis restart keeps its keys):
 * - the user story: 2 leases held, SIGTERM, restart → both releases answer 200, not 404;
 *   the replica holds 2 connections to Redis (the lease store's and its one for every other part);
 * - Redis killed under lease load: 503 store_unavailable with Retry-After within 2 s, no other 5xx,
 *   /readyz false; Redis back → leasing resumes by itself;
 * - the store URL's password never appears in serve's logs or in an engine's or proxy's environment.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import {
    engineProcessesOf,
    ProcProject,
    proxyProcesses,
    serve,
    ServeProcess,
    withServiceLogs,
} from "../helpers/processes";
import { connectedClients, type TestRedis } from "../helpers/redis";
import { withRedisProject } from "../helpers/redis-project";
import { leaseLoad } from "../helpers/lease-load";
import { waitFor } from "../helpers/harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 3, maxReplicas: 3, cooldownSeconds: 0 }],
};
let p: ProcProject;
let redis: TestRedis;
/** Every serve this file started, for the redaction checks at the end. */
const services: ServeProcess[] = [];
/** Environments of the engine processes seen while the first start converged. */
const engineEnvs: string[] = [];

withRedisProject("rds", config, (made) => ({ p, redis } = made), { aof: true });

const healthy = (svc: ServeProcess, n: number) =>
    waitFor(
        `${n} healthy proxies`,
        async () => {
            const px = (await svc.call("GET", "/v1/proxies")).body.proxies as { health: string }[];
            return px.length === n && px.every((x) => x.health === "healthy");
        },
        120_000,
        100,
    );

const environ = (pid: number) => {
    try {
        return fs.readFileSync(`/proc/${pid}/environ`, "utf8");
    } catch {
        return "";
    }
};

test(
    "2 leases held, SIGTERM, restart: both releases answer 200 (the leases lived in Redis)",
    { timeout: 240_000 },
    async () => {
        const first = await serve(p, ["--store", redis.url]);
        services.push(first);
        // The start converges right after "ready": catch its engine processes' environments while they run.
        const watch = setInterval(() => {
            for (const e of engineProcessesOf(first.child.pid!)) engineEnvs.push(environ(e.pid));
        }, 20);
        try {
            await healthy(first, 3);
        } finally {
            clearInterval(watch);
        }
        // One store session per replica: the lease store's connection and one for every cluster part
        // (leader lock, verdicts, journal, events, desired counts, scale queue, timeline, repair back-off).
        assert.deepEqual((await connectedClients(redis.url)).sort(), ["egress-cluster", "egress-leases"]);
        const held = [];
        for (let i = 0; i < 2; i++) {
            const r = await first.call("POST", "/v1/leases", { body: { pool: "web", ttlSeconds: 600 } });
            assert.equal(r.status, 201, JSON.stringify(r.body));
            held.push(r.body.lease);
        }
        first.child.kill("SIGTERM");
        assert.equal(await first.exited, 0);

        const second = await serve(p, ["--store", redis.url, "--no-converge"]);
        services.push(second);
        const listed = (await second.call("GET", "/v1/leases")).body.leases as { proxy: string }[];
        assert.deepEqual(
            listed.map((l) => l.proxy).sort(),
            held.map((l) => l.proxy.id).sort(),
            "the new process sees the held leases",
        );
        for (const l of held) {
            const r = await second.call("POST", `/v1/leases/${l.id}/release`, { body: { outcome: "ok" } });
            assert.equal(r.status, 200, JSON.stringify(r.body));
            assert.equal(r.body.lease.proxyId, l.proxy.id);
        }
        second.child.kill("SIGTERM");
        assert.equal(await second.exited, 0);
    },
);

test(
    "Redis killed under lease load: 503 store_unavailable with Retry-After, no other 5xx, /readyz false; back by itself",
    { timeout: 240_000 },
    async () => {
        const svc = await serve(p, ["--store", redis.url, "--no-converge"]);
        services.push(svc);
        await healthy(svc, 3);
        const load = leaseLoad(svc, { clients: 4, pool: "web" });
        await waitFor("leases granted before the outage", () => load.count("lease 201") >= 20, 30_000, 25);
        await redis.kill();
        await waitFor("a store_unavailable answer", () => load.count("lease 503 store_unavailable") > 0, 10_000, 25);
        const down = await svc.call("GET", "/readyz");
        assert.equal(down.status, 503);
        assert.equal(down.body.error.code, "store_unavailable");
        assert.ok(
            !JSON.stringify(down.body).includes(redis.password),
            "the readiness answer does not show the password",
        );
        const grantedWhileDown = load.count("lease 201");
        await new Promise((r) => setTimeout(r, 1500)); // a while down under load: nothing hangs, nothing crashes
        await redis.start();
        await withServiceLogs(
            svc,
            waitFor("leasing resumes", () => load.count("lease 201") > grantedWhileDown + 10, 30_000, 25),
        );
        await waitFor("/readyz true again", async () => (await svc.call("GET", "/readyz")).status === 200, 10_000, 25);
        await load.stop();
        process.stdout.write(
            `# answers during the outage test: ${JSON.stringify(Object.fromEntries(load.seen))}, slowest ${load.slowest()} ms\n`,
        );
        assert.equal(load.retryAfter(), "2");
        assert.ok(load.slowest() < 2000, `every answer within 2 s (slowest ${load.slowest()} ms)`);
        assert.equal(svc.child.exitCode, null, "the service is still running");
        assert.deepEqual(load.otherFiveHundreds(), [], `answers: ${JSON.stringify([...load.seen])}`);
        assert.ok(
            svc.entries.some((e) => /lease store \(Redis\) is unreachable/.test(e.msg)) &&
                svc.entries.some((e) => /lease store \(Redis\) is back/.test(e.msg)),
            "the outage and the recovery are logged",
        );
        svc.child.kill("SIGTERM");
        assert.equal(await svc.exited, 0);
    },
);

test("the store URL's password is in no log line of serve and in no engine's or proxy's environment", () => {
    const lines = services.flatMap((s) => s.logs);
    assert.ok(lines.length > 20, "the services logged");
    assert.deepEqual(
        lines.filter((l) => l.includes(redis.password)),
        [],
    );
    assert.ok(
        engineEnvs.some((e) => e.includes("PULUMI_BACKEND_URL")),
        "engine environments were read",
    );
    assert.deepEqual(
        engineEnvs.filter((e) => e.includes(redis.password) || e.includes("EGRESS_STORE")),
        [],
    );
    const proxies = [...proxyProcesses(p).values()];
    assert.ok(proxies.length === 3, "three local proxies run");
    for (const pid of proxies) {
        const env = environ(pid);
        assert.ok(env.length > 0, `read the environment of proxy pid ${pid}`);
        assert.ok(!env.includes(redis.password) && !env.includes("EGRESS_STORE"), `proxy pid ${pid} has no store URL`);
    }
});
