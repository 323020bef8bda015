/**
 * Restart safety: a new service rebuilds its view from stack outputs, marks operations a crash cut
 * short as interrupted, removes stack locks left by dead processes, and then scales normally.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { convergedOk, startTestService, TestService, TOKENS } from "../helpers/service";
import { settled, teardown } from "../helpers/harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 2, maxReplicas: 4 }],
};
let svc: TestService;
const cleanup = teardown();
before(async () => {
    svc = await startTestService(config);
    cleanup.own(svc);
    await convergedOk(svc);
});

test("after a restart the fleet is rebuilt from stack outputs before any engine run", async () => {
    await svc.restart({ converge: false });
    const proxies = (await svc.call("GET", "/v1/proxies", { token: TOKENS.discover })).body.proxies;
    assert.deepEqual(proxies.map((p: any) => p.id).sort(), ["web-0", "web-1"]);
    assert.deepEqual(
        (await svc.call("GET", "/v1/operations")).body.operations.filter((o: any) => o.status === "running"),
        [],
    );
});

test(
    "a crash mid-operation: the operation reads as interrupted, a dead holder's lock is removed, scaling works",
    { timeout: 120_000 },
    async () => {
        await svc.stop();
        const journal = path.join(svc.runDir, "operations-svc.json");
        const crashed = {
            id: "op_crashed",
            kind: "scale",
            status: "running",
            desired: { web: 3 },
            requests: 1,
            createdAt: new Date().toISOString(),
            startedAt: new Date().toISOString(),
        };
        fs.writeFileSync(journal, JSON.stringify([crashed]));
        // A lock exactly like the file backend writes, held by a pid that no longer exists.
        const lockDir = path.join(svc.project.dir, "backend", ".pulumi", "locks", "organization", "egress", "svc");
        fs.mkdirSync(lockDir, { recursive: true });
        fs.writeFileSync(
            path.join(lockDir, "00000000-dead.json"),
            JSON.stringify({
                pid: 2 ** 22 + 17,
                username: "root",
                hostname: os.hostname(),
                timestamp: new Date().toISOString(),
            }),
        );

        await svc.restart({ converge: false });
        const op = (await svc.call("GET", "/v1/operations/op_crashed", { token: TOKENS.scale })).body.operation;
        assert.equal(op.status, "interrupted");
        assert.match(op.error, /stopped before this operation finished/);
        assert.deepEqual(
            fs.readdirSync(lockDir).filter((f) => f.includes("dead")),
            [],
            "the stale lock is gone",
        );
        assert.ok(
            svc.logs.some((l) => l.includes("stale lock")),
            "recovery is logged",
        );

        const r = await svc.call("PUT", "/v1/pools/web/replicas", { token: TOKENS.scale, body: { replicas: 3 } });
        assert.equal(r.status, 202);
        assert.equal((await settled(svc, r.body.operation.id)).status, "succeeded");
        assert.equal((await svc.call("GET", "/v1/proxies")).body.proxies.length, 3);
    },
);
