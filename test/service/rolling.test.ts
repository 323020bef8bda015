/**
 * A rolling change on the real engine with real local proxies: the stack file moves a pool of 4 to
 * another port range (every member's process is replaced), and the next update rolls it one member at
 * a time behind one surge member: never fewer than 4 healthy members at any 250 ms sample, never more
 * than 5 proxy processes, each batch recorded on the operation, and 4 members on the new ports at the end.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as path from "node:path";
import { proxyProcesses } from "../helpers/processes";
import { onRange, rollingConfig as config, rollingPortRange, watchRolling } from "../helpers/rolling";
import {
    convergedOk,
    poolView,
    proxyUrls,
    samplePool,
    startTestService,
    TestService,
    TOKENS,
} from "../helpers/service";
import { settled, teardown, waitFor } from "../helpers/harness";

let svc: TestService;
let oldBase: number;
let newBase: number;

const cleanup = teardown();
before(async () => {
    oldBase = await rollingPortRange();
    newBase = await rollingPortRange([oldBase]);
    svc = await startTestService(config(oldBase));
    cleanup.own(svc);
    await convergedOk(svc);
    await waitFor("4 healthy", async () => (await poolView(svc, "web")).healthy === 4, 30_000);
});

test(
    "a port change of a pool of 4 rolls one member at a time: healthy ≥ 4, at most 5 members, all on the new ports",
    { timeout: 600_000 },
    async () => {
        assert.ok(onRange(await proxyUrls(svc), oldBase), "4 members on the old ports");

        const stateDir = path.join(svc.runDir, "local", "svc");
        const processes: number[] = [];
        const sampler = samplePool(svc, "web", {
            check: (p) => {
                assert.equal(p.desired, 4, "the surge is not a new desired count");
                processes.push(proxyProcesses({ stateDir }).size);
            },
        });
        let samples: { healthy: number[]; actual: number[] };
        let batches: Set<string>;
        let op: any;
        try {
            svc.project.writeConfig(config(newBase));
            const r = await svc.call("PUT", "/v1/pools/web/replicas", { token: TOKENS.scale, body: { replicas: 4 } });
            assert.equal(r.status, 202, JSON.stringify(r.body));
            const id = r.body.operation.id as string;
            // The batch running now, as a client polling the operation sees it.
            const watcher = watchRolling(
                async () => (await svc.call("GET", `/v1/operations/${id}`, { token: TOKENS.scale })).body.operation,
            );
            op = await settled(svc, id, 540_000);
            batches = (await watcher).batches;
        } finally {
            samples = await sampler.stop();
        }
        assert.equal(op.status, "succeeded", op.error);
        await waitFor("web-0..3 on the new ports", async () => onRange(await proxyUrls(svc), newBase));
        assert.ok(Math.min(...samples.healthy) >= 4, `healthy never below 4: ${samples.healthy.join(" ")}`);
        assert.ok(samples.healthy.length > 20, `sampled ${samples.healthy.length} times`);
        assert.ok(Math.max(...samples.actual) <= 5, `at most 5 members listed: ${samples.actual.join(" ")}`);
        assert.ok(Math.max(...processes) <= 5, `at most 5 proxy processes: ${processes.join(" ")}`);
        assert.deepEqual(op.rolling.surge, ["web-4"]);
        assert.deepEqual([...op.rolling.replaced].sort(), ["web-0", "web-1", "web-2", "web-3"]);
        assert.ok(batches.has("1/4:web-0") && batches.has("4/4:web-3"), `batches seen: ${[...batches].join(" ")}`);
        for (const b of batches) assert.match(b, /^\d\/4:web-\d$/, "one member per batch");
        assert.ok(
            svc.logs.some((l) => l.includes("batch 2 of 4")),
            "the progress names the batch",
        );

        assert.ok(Math.max(...processes) === 5, "the surge member stood in");
        assert.equal(proxyProcesses({ stateDir }).size, 4);
    },
);
