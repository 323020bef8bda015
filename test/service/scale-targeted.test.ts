/**
 * A scale touches the members it adds or removes, and nothing else (engine countTargets): on the real
 * engine, 3 → 5 creates web-3 and web-4 alone (no other resource read, diffed or written), 5 → 2 deletes
 * web-2..web-4 alone; discovery and the stack outputs follow both; the members left keep their process.
 * A pool with no member yet (0 → 2) takes a plain `up`.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { runningProxies } from "../../components/local/process";
import * as path from "node:path";
import { healthyIds, startTestService, steppedOn, TestService, TOKENS } from "../helpers/service";
import { settled, teardown, waitFor } from "../helpers/harness";

let svc: TestService;
const cleanup = teardown();
before(async () => {
    svc = await startTestService({
        "egress:providers": { local: { type: "local" } },
        "egress:pools": [
            { name: "web", provider: "local", replicas: 3, maxReplicas: 8 },
            { name: "api", provider: "local", replicas: 0, maxReplicas: 4 },
        ],
    });
    cleanup.own(svc);
    await waitFor("3 healthy", async () => (await healthyIds(svc)).length === 3, 60_000);
});

const pids = () => new Map([...runningProxies(path.join(svc.runDir, "local", "svc"))].map(([id, p]) => [id, p[0]]));

/** Scales `pool` to `n` and returns the names of the resources the engine started a step on. */
async function scale(pool: string, n: number): Promise<string[]> {
    const r = await svc.call("PUT", `/v1/pools/${pool}/replicas`, { token: TOKENS.scale, body: { replicas: n } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const op = await settled(svc, r.body.operation.id);
    assert.equal(op.status, "succeeded", op.error);
    // The engine's default provider for the dynamic resources (`default`) is looked at by every run.
    const names = await steppedOn(svc, op.id);
    return names.filter((n) => !n.startsWith("default")).sort();
}

test("3 → 5 → 2: each scale steps on the members it adds or removes alone", { timeout: 180_000 }, async () => {
    const before = pids();
    const up = await scale("web", 5);
    assert.deepEqual(up, ["web-3", "web-3-process", "web-4", "web-4-process"]);
    await waitFor("5 healthy", async () => (await healthyIds(svc)).length === 5, 30_000);
    const afterUp = pids();
    for (const id of ["svc-web-0", "svc-web-1", "svc-web-2"]) assert.equal(afterUp.get(id), before.get(id), id);

    const down = await scale("web", 2);
    assert.deepEqual(down, ["web-2", "web-2-process", "web-3", "web-3-process", "web-4", "web-4-process"]);
    await waitFor("2 healthy", async () => JSON.stringify(await healthyIds(svc)) === '["web-0","web-1"]', 30_000);
    assert.deepEqual([...pids().keys()].sort(), ["svc-web-0", "svc-web-1"], "the removed members' processes stopped");
    const stack = await svc.call("GET", "/v1/pools", { token: TOKENS.discover });
    assert.equal(stack.body.pools.find((p: any) => p.name === "web").actual, 2);
});

test("a pool with no member yet: a plain up creates them", { timeout: 120_000 }, async () => {
    const steps = await scale("api", 2);
    assert.ok(steps.includes("api-0-process") && steps.includes("api-1-process"), steps.join());
    await waitFor(
        "api healthy",
        async () => (await healthyIds(svc)).filter((id) => id.startsWith("api-")).length === 2,
        30_000,
    );
});
