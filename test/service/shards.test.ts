/**
 * The service on a pool spread over shard stacks (`membersPerStack`, src/engine/fleet-driver.ts), on the
 * real engine with local members: it serves every stack's members, a scale through the API runs on the
 * shards its members land in, and a member killed in a shard is healed there by the reconcile loop.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { findProxyProcesses } from "../../components/local/process";
import { healthyIds, startTestService, steppedOn, TestService, TOKENS } from "../helpers/service";
import { checkpointDir, checkpointResources, membersOf } from "../../src/engine";
import { settled, teardown, waitFor } from "../helpers/harness";

let svc: TestService;
const cleanup = teardown();
before(async () => {
    svc = await startTestService(
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [
                { name: "web", provider: "local", replicas: 3, maxReplicas: 8, membersPerStack: 2, maxSurge: 1 },
            ],
        },
        { probeIntervalMs: 300, reconcileIntervalMs: 500 },
    );
    cleanup.own(svc);
    await waitFor("3 healthy", async () => (await healthyIds(svc)).length === 3, 60_000);
});

const backend = () => path.join(svc.project.dir, "backend");
const inStack = (stack: string) =>
    membersOf(checkpointResources(backend(), stack) ?? [])
        .map((m) => m.id)
        .sort();

test(
    "the members of every stack are served, and a scale runs on the shards it lands in",
    { timeout: 180_000 },
    async () => {
        assert.deepEqual(inStack("svc"), ["web-0", "web-1"]);
        assert.deepEqual(inStack("svc.web.1"), ["web-2"]);
        const mainWritten = fs.statSync(path.join(checkpointDir(backend()), "svc.json")).mtimeMs;
        const r = await svc.call("PUT", "/v1/pools/web/replicas", { token: TOKENS.scale, body: { replicas: 6 } });
        assert.equal(r.status, 202, JSON.stringify(r.body));
        const op = await settled(svc, r.body.operation.id);
        assert.equal(op.status, "succeeded", op.error);
        const stepped = (await steppedOn(svc, op.id)).filter((n) => !n.startsWith("default")).sort();
        assert.deepEqual(stepped, ["web-3", "web-3-process", "web-4", "web-4-process", "web-5", "web-5-process"]);
        assert.equal(fs.statSync(path.join(checkpointDir(backend()), "svc.json")).mtimeMs, mainWritten);
        assert.deepEqual(inStack("svc.web.1"), ["web-2", "web-3"]);
        assert.deepEqual(inStack("svc.web.2"), ["web-4", "web-5"]);
        await waitFor("6 healthy", async () => (await healthyIds(svc)).length === 6, 30_000);
        const pools = await svc.call("GET", "/v1/pools", { token: TOKENS.discover });
        assert.equal(pools.body.pools.find((p: any) => p.name === "web").actual, 6);
    },
);

test("a member killed in a shard is healed in its shard", { timeout: 120_000 }, async () => {
    const stateDir = path.join(svc.runDir, "local", "svc");
    const [old] = findProxyProcesses(stateDir, "svc-web-4");
    assert.ok(old, "web-4 runs");
    const killedAt = Date.now();
    process.kill(old, "SIGKILL");
    const op = await waitFor(
        "a settled heal of web-4",
        async () =>
            ((await svc.call("GET", "/v1/operations", { token: TOKENS.scale })).body.operations as any[]).find(
                (o) =>
                    o.kind === "heal" &&
                    o.members.includes("web-4") &&
                    Date.parse(o.createdAt) >= killedAt &&
                    ["succeeded", "failed"].includes(o.status),
            ),
        60_000,
        100,
    );
    assert.equal(op.status, "succeeded", op.error);
    await waitFor("6 healthy again", async () => (await healthyIds(svc)).length === 6, 30_000);
    const [now] = findProxyProcesses(stateDir, "svc-web-4");
    assert.ok(now && now !== old, "a new process for web-4");
    assert.deepEqual(inStack("svc.web.2"), ["web-4", "web-5"]);
});
