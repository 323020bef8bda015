/**
 * A rolling change on the real engine with real local proxies: the stack file moves a pool of 4 to
 * another port range (every member's process is replaced), and the next update rolls it one member at
 * a time behind one surge member: never fewer than 4 healthy members at any 250 ms sample, never more
 * than 5 proxy processes, each batch recorded on the operation, and 4 members on the new ports at the end.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as path from "node:path";
import { freePortRange } from "../helpers/net";
import { proxyProcesses } from "../helpers/processes";
import {
    poolView,
    proxyUrls,
    samplePool,
    settled,
    settledConverge,
    startTestService,
    TestService,
    TOKENS,
    waitFor,
} from "../helpers/service";

let svc: TestService;
let oldBase: number;
let newBase: number;
const config = (basePort: number) => ({
    "egress:providers": { local: { type: "local", basePort } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 4, maxReplicas: 6, drainSeconds: 5 }],
});

before(async () => {
    oldBase = await freePortRange(4);
    do newBase = await freePortRange(5);
    while (Math.abs(newBase - oldBase) < 6);
    svc = await startTestService(config(oldBase));
    assert.equal((await settledConverge(svc)).status, "succeeded");
    await waitFor("4 healthy", async () => (await poolView(svc, "web")).healthy === 4, 30_000);
});
after(async () => {
    await svc?.close();
});

const port = (url: string) => Number(new URL(url).port);

test(
    "a port change of a pool of 4 rolls one member at a time: healthy ≥ 4, at most 5 members, all on the new ports",
    { timeout: 600_000 },
    async () => {
        const before = await proxyUrls(svc);
        assert.deepEqual(
            [...before.values()].map(port).sort(),
            [0, 1, 2, 3].map((i) => oldBase + i),
        );

        const stateDir = path.join(svc.runDir, "local", "svc");
        const processes: number[] = [];
        const sampler = samplePool(svc, "web", {
            check: (p) => {
                assert.equal(p.desired, 4, "the surge is not a new desired count");
                processes.push(proxyProcesses({ stateDir }).size);
            },
        });
        let samples: { healthy: number[]; actual: number[] };
        const batches = new Set<string>();
        let op: any;
        try {
            svc.project.writeConfig(config(newBase));
            const r = await svc.call("PUT", "/v1/pools/web/replicas", { token: TOKENS.scale, body: { replicas: 4 } });
            assert.equal(r.status, 202, JSON.stringify(r.body));
            const id = r.body.operation.id as string;
            // The batch running now, as a client polling the operation sees it.
            const watcher = (async () => {
                for (;;) {
                    const o = (await svc.call("GET", `/v1/operations/${id}`, { token: TOKENS.scale })).body.operation;
                    if (o.rolling) batches.add(`${o.rolling.batch}/${o.rolling.of}:${o.rolling.members.join(",")}`);
                    if (["succeeded", "failed", "interrupted"].includes(o.status)) return;
                    await new Promise((res) => setTimeout(res, 200));
                }
            })();
            op = await settled(svc, id, 540_000);
            await watcher;
        } finally {
            samples = await sampler.stop();
        }
        assert.equal(op.status, "succeeded", op.error);
        const after = await waitFor("4 members on the new ports", async () => {
            const u = await proxyUrls(svc);
            return u.size === 4 && [...u.values()].every((url) => port(url) >= newBase && port(url) < newBase + 4) && u;
        });
        assert.deepEqual([...after.keys()].sort(), ["web-0", "web-1", "web-2", "web-3"]);
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
