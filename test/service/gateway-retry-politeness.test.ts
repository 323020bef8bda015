/**
 * A gateway retry under a politeness rule (issue 35): the retry takes over the politeness slot of the
 * attempt it leaves (AcquireRequest.replaces), so a site at its `maxConcurrency` does not refuse it for
 * that slot. With each lease store (memory; Redis, a real redis-server), 3 real `local` members per pool
 * and a loopback origin capped at 1 (pool `one`) and 2 (pool `two`) requests in flight: one member's
 * process is killed (SIGKILL), then 15 concurrent gateway requests all get 200, those that met the dead
 * member with `X-Egress-Attempts: 2` from a live one, and the origin never has more than the cap at once.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import * as path from "node:path";
import { countingOrigin, viaProxy } from "../helpers/net";
import { settledConverge, startTestService, type TestService, TOKENS, waitHealthy } from "../helpers/service";
import { startRedis, type TestRedis } from "../helpers/redis";
import { findProxyProcesses } from "../../components/local/process";
import type { StoreSpec } from "../../src/state/redis/url";

const CAPS = { one: 1, two: 2 } as const;

for (const kind of ["memory", "redis"] as const) {
    describe(`a retry under politeness with the ${kind} store`, () => {
        let svc: TestService;
        let redis: TestRedis | undefined;
        let origin: Awaited<ReturnType<typeof countingOrigin>>;

        before(async () => {
            // A page that takes 30 ms, so requests overlap and the origin sees how many come at once.
            origin = await countingOrigin(30);
            let store: StoreSpec = { kind: "memory" };
            if (kind === "redis") {
                redis = await startRedis();
                store = { kind: "redis", url: redis.url, tls: false, db: 0 };
            }
            const pools = Object.entries(CAPS).map(([name, maxConcurrency]) => ({
                name,
                provider: "local",
                replicas: 3,
                maxReplicas: 3,
                targets: [{ host: "127.0.0.1", maxConcurrency }],
            }));
            // Probes far apart: the killed member must still look healthy when the requests come, as it
            // does between two probe rounds in production.
            svc = await startTestService(
                { "egress:providers": { local: { type: "local" } }, "egress:pools": pools },
                { gateway: { port: 0 }, store, probeIntervalMs: 120_000 },
            );
            await settledConverge(svc);
            await waitHealthy(svc, 6);
        });
        after(async () => {
            await svc?.close();
            await origin?.close();
            await redis?.cleanup();
        });

        for (const [pool, cap] of Object.entries(CAPS)) {
            test(`maxConcurrency ${cap}: a member killed, 15 concurrent requests all answered 200`, async () => {
                const dead = `${pool}-1`;
                const pids = findProxyProcesses(path.join(svc.runDir, "local", "svc"), `svc-${dead}`);
                assert.equal(pids.length, 1, `one process for ${dead}: ${pids}`);
                process.kill(pids[0], "SIGKILL");
                origin.reset();
                const auth = `Basic ${Buffer.from(`${pool}:${TOKENS.lease}`).toString("base64")}`;
                const answers = await Promise.all(
                    Array.from({ length: 15 }, (_, i) =>
                        viaProxy(svc.gatewayPort!, `http://127.0.0.1:${origin.port}/${pool}/${i}`, auth),
                    ),
                );
                const report = answers
                    .map(
                        (a) => `${a.status} ${a.headers["x-egress-proxy"]} ${a.headers["x-egress-attempts"]} ${a.body}`,
                    )
                    .join("\n");
                assert.deepEqual(
                    answers.map((a) => a.status),
                    Array(15).fill(200),
                    report,
                );
                for (const a of answers) assert.notEqual(a.headers["x-egress-proxy"], dead, report);
                const retried = answers.filter((a) => a.headers["x-egress-attempts"] === "2");
                assert.ok(retried.length >= 1, `the dead member was met and retried:\n${report}`);
                assert.ok(
                    answers.every((a) => ["1", "2"].includes(String(a.headers["x-egress-attempts"]))),
                    report,
                );
                assert.ok(
                    origin.most() <= cap,
                    `the origin had ${origin.most()} requests at once, over the cap of ${cap}`,
                );
                assert.ok(origin.most() >= 1);
            });
        }
    });
}
