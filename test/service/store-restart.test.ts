/**
 * Redis stopped and started again under lease load, as production runs it (AOF on, `appendfsync
 * everysec`), at a real `egress serve --store redis://…`, once with Redis' own shutdown (SIGTERM) and
 * once killed (SIGKILL), each time on the same port and data dir:
 * - while it is down: 503 store_unavailable with Retry-After within 2 s, no other 5xx, no hang, and
 *   /readyz 503 store_unavailable;
 * - once it is back: /readyz 200 and leasing resumes by itself (no restart of serve);
 * - the leases held from before the outage answer 503 while it is down and release 200 afterwards: the
 *   AOF kept them (taken more than the one second everysec may lose before the stop).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { cli, killServices, procProject, ProcProject, serve, ServeProcess, untilHealthy } from "../helpers/processes";
import { startRedis, TestRedis } from "../helpers/redis";
import { leaseLoad } from "../helpers/lease-load";
import { waitFor } from "../helpers/harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 5, maxReplicas: 5, cooldownSeconds: 0 }],
};
let p: ProcProject;
let redis: TestRedis;
let svc: ServeProcess;

before(async () => {
    redis = await startRedis({ aof: true, fsync: "everysec" });
    p = procProject("rst", config);
    svc = await serve(p, ["--store", redis.url]);
    await untilHealthy(svc, 5);
});
after(async () => {
    killServices();
    cli(p, ["destroy", "--yes", "--quiet"]);
    p.cleanup();
    await redis?.cleanup();
});

for (const how of ["stop", "kill"] as const) {
    test(
        `Redis ${how === "stop" ? "stopped (SIGTERM)" : "killed (SIGKILL)"} and started again under lease load: 503s while down, leasing resumes, held leases release`,
        { timeout: 120_000 },
        async (t) => {
            const logged = svc.entries.length;
            t.after(() => {
                const store = svc.entries.slice(logged).filter((e) => /lease store/.test(e.msg));
                process.stdout.write(
                    `# ${how}: ${JSON.stringify(store.map((e) => `${e.time} ${e.msg} ${e.error ?? ""}`))}\n`,
                );
            });
            const held = [];
            for (let i = 0; i < 2; i++) {
                const r = await svc.call("POST", "/v1/leases", { body: { pool: "web", ttlSeconds: 600 } });
                assert.equal(r.status, 201, JSON.stringify(r.body));
                held.push(r.body.lease as { id: string; proxy: { id: string } });
            }
            // One client per member left, so none_available stays rare and the counts mean something.
            const load = leaseLoad(svc, { clients: 3, pool: "web" });
            t.after(() => load.stop().catch(() => undefined)); // a failed assertion must not leave them running
            await waitFor("leases granted before the outage", () => load.count("lease 201") >= 20, 30_000, 25);
            // appendfsync everysec: what is older than a second is on disk, whatever ends Redis.
            await new Promise((r) => setTimeout(r, 1200));
            await redis[how]();
            const downAt = Date.now();
            // Clients holding a lease at the stop retry its release; the others' next lease is refused.
            const refused = () =>
                load.count("lease 503 store_unavailable") + load.count("release 503 store_unavailable");
            await waitFor("a store_unavailable answer", () => refused() > 0, 10_000, 25);
            const firstRefusalMs = Date.now() - downAt;
            const ready = await svc.call("GET", "/readyz");
            assert.equal(ready.status, 503);
            assert.equal(ready.body.error.code, "store_unavailable");
            assert.equal(ready.headers.get("retry-after"), "2");
            const whileDown = await svc.call("POST", `/v1/leases/${held[0].id}/release`, { body: { outcome: "ok" } });
            assert.equal(whileDown.status, 503, JSON.stringify(whileDown.body));
            assert.equal(whileDown.body.error.code, "store_unavailable");
            const grantedBefore = load.count("lease 201");
            await new Promise((r) => setTimeout(r, 1500)); // a while down under load: nothing hangs, nothing crashes
            assert.ok(load.count("lease 201") - grantedBefore <= 3, "nothing is granted while Redis is away");
            await redis.start();
            const upAt = Date.now();
            await waitFor("leasing resumes", () => load.count("lease 201") > grantedBefore + 10, 30_000, 25);
            const resumedMs = Date.now() - upAt;
            await waitFor(
                "/readyz true again",
                async () => (await svc.call("GET", "/readyz")).status === 200,
                10_000,
                25,
            );
            await load.stop();
            process.stdout.write(
                `# ${how}: first 503 ${firstRefusalMs} ms after, leasing resumed ${resumedMs} ms after the start; answers ${JSON.stringify(Object.fromEntries(load.seen))}, slowest ${load.slowest()} ms\n`,
            );
            for (const l of held) {
                const r = await svc.call("POST", `/v1/leases/${l.id}/release`, { body: { outcome: "ok" } });
                assert.equal(r.status, 200, `a lease held before the outage releases: ${JSON.stringify(r.body)}`);
                assert.equal(r.body.lease.proxyId, l.proxy.id);
            }
            assert.equal(load.retryAfter(), "2");
            assert.ok(load.slowest() < 2000, `every answer within 2 s (slowest ${load.slowest()} ms)`);
            assert.deepEqual(load.otherFiveHundreds(), [], `answers: ${JSON.stringify([...load.seen])}`);
            assert.equal(svc.child.exitCode, null, "the service is still running");
        },
    );
}
