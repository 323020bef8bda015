/**
 * Issue 19's bad day for the Pulumi backend: `egress serve` on a real PostgreSQL 15 (Pulumi's postgres://
 * backend) whose server is SIGKILLed and comes back. While it is down:
 * - a scale request is answered 202 as ever, and its engine run fails as transient and is retried (the
 *   operation's events show each retry, the service warns once) instead of failing the operation;
 * - leasing goes on: every lease and release answers as usual (serving state is not in the backend);
 * - the service stays up and ready.
 * Once the server is back, the retried operation succeeds, and nothing leaked: processes = outputs,
 * no lock row, `gc` finds nothing.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readSse } from "../helpers/sse";
import { ADMIN_TOKEN, postgresProject, serve } from "../helpers/processes";
import { assertNothingLeaked } from "../helpers/restart-checks";
import { settled, waitFor } from "../helpers/harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 2, maxReplicas: 6, cooldownSeconds: 0 }],
};
const db = postgresProject("pgd", config);

test(
    "PostgreSQL down: the scale is retried, not failed, leasing goes on; back up, it succeeds",
    { timeout: 300_000 },
    async () => {
        const svc = await serve(db.p);
        try {
            const members = async () => ((await svc.call("GET", "/v1/proxies")).body.proxies as unknown[]).length;
            await waitFor("the start-up convergence to 2", async () => (await members()) === 2, 120_000, 25);
            // Both healthy before the loop begins: a member the probes have not judged yet is not leased.
            await waitFor(
                "2 healthy members",
                async () => {
                    const proxies = (await svc.call("GET", "/v1/proxies")).body.proxies as { health: string }[];
                    return proxies.filter((x) => x.health === "healthy").length === 2;
                },
                60_000,
                25,
            );

            // Leases go on throughout: a lease+release loop, every answer recorded.
            let leasing = true;
            const statuses: number[] = [];
            const odd: unknown[] = [];
            const loop = (async () => {
                while (leasing) {
                    const g = await svc.call("POST", "/v1/leases", { body: { pool: "web", ttlSeconds: 30 } });
                    statuses.push(g.status);
                    if (g.status !== 201) odd.push(g.body);
                    if (g.status === 201) {
                        const r = await svc.call("POST", `/v1/leases/${g.body.lease.id}/release`, {
                            body: { outcome: "ok" },
                        });
                        statuses.push(r.status);
                        if (r.status !== 200) odd.push(r.body);
                    }
                    await new Promise((res) => setTimeout(res, 50));
                }
            })();

            await db.pg.kill();
            const downAt = Date.now();
            const r = await svc.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 3 } });
            assert.equal(r.status, 202, JSON.stringify(r.body));
            const id = r.body.operation.id;
            // The operation's events show every retry (the log warns once per operation).
            const retries: string[] = [];
            const stream = readSse(svc.url, id, {
                token: ADMIN_TOKEN,
                onEvent: (e) => {
                    if (e.type === "progress" && /retrying in/.test(e.data.message ?? "")) retries.push(e.data.message);
                },
            });
            // Twice: the first retry fails too while the server is still down (0.5 s, then 1 s of back-off).
            await waitFor("the service to retry the engine run twice", () => retries.length >= 2, 60_000, 100);
            assert.match(retries[1], /^backend unreachable, retrying in 1000 ms \(attempt 2\)/);
            assert.equal(
                svc.entries.filter((e) => e.msg === "the Pulumi backend is unreachable; retrying" && e.operation === id)
                    .length,
                1,
                "warned once",
            );
            const during = (await svc.call("GET", `/v1/operations/${id}`)).body.operation;
            assert.equal(during.status, "running", "retried, not failed");
            assert.equal(
                (await fetch(`${svc.url}/readyz`)).status,
                200,
                "still ready: leasing does not need the backend",
            );
            const leasedWhileDown = statuses.length;

            await db.pg.start();
            console.log(`PostgreSQL was down ${Date.now() - downAt} ms`);
            const op = await settled(svc, id, 180_000);
            assert.equal(op.status, "succeeded", JSON.stringify(op));
            await stream;
            leasing = false;
            await loop;
            assert.ok(leasedWhileDown > 0, "leases were asked for while the backend was down");
            assert.deepEqual(
                [...new Set(statuses)].sort(),
                [200, 201],
                `every lease (201) and release (200) answered as usual: ${statuses.length} calls; others: ${JSON.stringify(odd.slice(0, 3))}`,
            );
            console.log(`lease and release calls across the outage: ${statuses.length}, all answered`);

            assert.equal(await members(), 3);
            await assertNothingLeaked(db.p, svc, svc.child.pid!);
            assert.deepEqual(db.pg.keys("locks"), [], "no lock row left");
        } finally {
            svc.child.kill("SIGTERM");
            await svc.exited;
        }
    },
);
