/**
 * Self-healing on the real engine with real local proxies, with nobody sending a request: a proxy
 * killed with SIGKILL comes back healthy; two killed at once are repaired one at a time (maxSurge 1); a
 * hung proxy (SIGSTOP) is replaced after replaceUnhealthyAfterSeconds; a repair that fails for real
 * (its port taken) backs off and succeeds once the port is free, without touching the stack meanwhile.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { freePortRange } from "../helpers/net";
import { startTestService, steppedOn, TestService, TOKENS } from "../helpers/service";
import { findProxyProcesses } from "../../components/local/process";
import { waitFor } from "../helpers/harness";

const PROBE_MS = 300;
const ROUND_MS = 500;
let svc: TestService;
let basePort: number;
const stopped: number[] = [];

const holderConnections = new Set<net.Socket>();
function listen(port: number): Promise<net.Server> {
    return new Promise((resolve, reject) => {
        const s = net.createServer((c) => holderConnections.add(c));
        s.once("error", reject);
        s.listen(port, "127.0.0.1", () => resolve(s));
    });
}

/** True while `pid` exists and has not exited (a zombie has: state Z in /proc/<pid>/stat). */
function running(pid: number): boolean {
    try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
        return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
    } catch {
        return false;
    }
}

const stateDir = () => path.join(svc.runDir, "local", "svc");
const pidOf = (member: string) => {
    const pids = findProxyProcesses(stateDir(), `svc-${member}`);
    assert.equal(pids.length, 1, `exactly one process for ${member}: ${pids}`);
    return pids[0];
};
const proxies = async () => (await svc.call("GET", "/v1/proxies", { token: TOKENS.discover })).body.proxies as any[];
const healOps = async () =>
    ((await svc.call("GET", "/v1/operations", { token: TOKENS.scale })).body.operations as any[]).filter(
        (o) => o.kind === "heal",
    );
const allHealthy = (ids: string[]) => async () => {
    const p = await proxies();
    return ids.every((id) => p.find((x) => x.id === id)?.health === "healthy") ? p : undefined;
};
const settledHeal = (member: string, after = 0) =>
    waitFor(
        `a settled heal of ${member}`,
        async () => {
            const ops = (await healOps()).filter(
                (o) =>
                    o.members.includes(member) &&
                    Date.parse(o.createdAt) >= after &&
                    ["succeeded", "failed"].includes(o.status),
            );
            return ops[0];
        },
        60_000,
        100,
    );

before(async () => {
    basePort = await freePortRange(3);
    svc = await startTestService(
        {
            "egress:providers": { local: { type: "local", basePort } },
            "egress:pools": [
                {
                    name: "web",
                    provider: "local",
                    replicas: 3,
                    maxReplicas: 3,
                    replaceUnhealthyAfterSeconds: 2,
                    maxSurge: 1,
                },
            ],
        },
        { probeIntervalMs: PROBE_MS, reconcileIntervalMs: ROUND_MS, healBackoff: { baseMs: 4000, maxMs: 8000 } },
    );
    await waitFor("3 healthy proxies after converge", allHealthy(["web-0", "web-1", "web-2"]), 60_000);
});
after(async () => {
    for (const pid of stopped)
        try {
            process.kill(pid, "SIGKILL");
        } catch {
            /* gone */
        }
    await svc?.close();
});

test(
    "SIGKILL of a proxy: the loop finds it gone and a targeted heal brings it back healthy, with no request from anyone",
    { timeout: 90_000 },
    async (t) => {
        const old = pidOf("web-1");
        const killedAt = Date.now();
        process.kill(old, "SIGKILL");
        const op = await settledHeal("web-1", killedAt);
        assert.equal(op.status, "succeeded", op.error);
        assert.deepEqual(op.members, ["web-1"]);
        assert.equal(op.reasons["web-1"].reason, "gone");
        assert.match(op.reasons["web-1"].detail, /no process of local proxy svc-web-1 is running/);
        await waitFor("web-1 healthy again", allHealthy(["web-0", "web-1", "web-2"]), 30_000, 50);
        const healedMs = Date.now() - killedAt;
        t.diagnostic(
            `kill → healthy: ${healedMs} ms = ${(healedMs / PROBE_MS).toFixed(1)} probe intervals (${PROBE_MS} ms), reconcile every ${ROUND_MS} ms`,
        );
        assert.notEqual(pidOf("web-1"), old, "a new process");
        // Targeted: the engine touched web-1's resources only (no refresh or replace of the others).
        const touched = await steppedOn(svc, op.id);
        assert.deepEqual(touched, ["web-1-process"], JSON.stringify(touched));
        const metrics = await (await fetch(`${svc.url}/metrics`)).text();
        assert.match(metrics, /egress_heals_total\{pool="web",reason="gone"\} 1/);
        assert.match(metrics, /egress_operations_total\{kind="heal",result="succeeded"\} 1/);
        assert.ok(
            svc.logs.some((l) => l.includes('"repairing web-1 (gone)"')),
            "the decision is logged",
        );
    },
);

test(
    "two proxies killed at once, maxSurge 1: repaired one per operation, both healthy again",
    { timeout: 120_000 },
    async () => {
        const killedAt = Date.now();
        process.kill(pidOf("web-0"), "SIGKILL");
        process.kill(pidOf("web-2"), "SIGKILL");
        const settledOps = async () =>
            (await healOps()).filter(
                (o) => Date.parse(o.createdAt) >= killedAt && !["queued", "running"].includes(o.status),
            );
        await waitFor(
            "both repaired",
            async () => (await settledOps()).flatMap((o) => o.members).length >= 2,
            90_000,
            100,
        );
        await waitFor("all healthy again", allHealthy(["web-0", "web-1", "web-2"]), 30_000, 100);
        const ops = await settledOps();
        assert.ok(
            ops.every((o) => o.status === "succeeded"),
            JSON.stringify(ops),
        );
        assert.ok(
            ops.every((o) => o.members.length === 1),
            `at most maxSurge (1) members per repair: ${JSON.stringify(ops.map((o) => o.members))}`,
        );
        assert.deepEqual(ops.flatMap((o) => o.members).sort(), ["web-0", "web-2"]);
        assert.ok(
            svc.logs.some((l) => l.includes("maxSurge") && l.includes('"skip":"max-surge"')),
            "the member held back is logged with why",
        );
    },
);

test(
    "a hung proxy (SIGSTOP: alive, never answers) is replaced once unhealthy for replaceUnhealthyAfterSeconds",
    { timeout: 120_000 },
    async () => {
        const hung = pidOf("web-2");
        stopped.push(hung);
        const at = Date.now();
        process.kill(hung, "SIGSTOP");
        const op = await settledHeal("web-2", at);
        assert.equal(op.status, "succeeded", op.error);
        assert.equal(op.reasons["web-2"].reason, "unhealthy");
        assert.match(op.reasons["web-2"].detail, /^unhealthy for \d+ s \(limit 2 s\)/);
        await waitFor("web-2 healthy again", allHealthy(["web-2"]), 30_000);
        assert.notEqual(pidOf("web-2"), hung);
        // Exited, though perhaps not reaped yet: an orphaned proxy's parent is init, which reaps when it gets
        // to it, and a zombie still answers kill(pid, 0).
        assert.ok(!running(hung), "the hung process was stopped by the replacement");
    },
);

test(
    "a repair that fails for real backs off (no engine run meanwhile), then succeeds once the cause is gone",
    { timeout: 120_000 },
    async () => {
        const old = pidOf("web-0");
        const killedAt = Date.now();
        process.kill(old, "SIGKILL");
        // Take the member's pinned port the moment it is free: the replacement cannot listen.
        let retryAt = 0;
        const holder = await waitFor("web-0's port", async () => listen(basePort).catch(() => undefined), 5000, 5);
        try {
            const failed = await settledHeal("web-0", killedAt);
            assert.equal(failed.status, "failed");
            assert.match(failed.error, /did not start listening on port/);
            const status = await waitFor(
                "web-0 in backoff",
                async () => {
                    const s = (await svc.call("GET", "/v1/heal", { token: TOKENS.discover })).body;
                    return s.backoff.find((b: any) => b.member === "web-0") ? s : undefined;
                },
                5000,
            );
            const b = status.backoff.find((x: any) => x.member === "web-0");
            assert.equal(b.failures, 1);
            retryAt = Date.parse(b.retryAt);
            assert.ok(
                retryAt - Date.parse(failed.finishedAt) >= 3500,
                `about baseMs (4 s) after the failure: ${b.retryAt} vs ${failed.finishedAt}`,
            );
            // Rounds go on meanwhile and say why they skip; no heal operation starts before retryAt.
            await waitFor(
                "a backoff skip logged",
                async () => svc.logs.some((l) => l.includes('"skip":"backoff"') && l.includes("web-0")),
                5000,
            );
            assert.equal(
                (await healOps()).filter((o) => Date.parse(o.createdAt) > Date.parse(failed.createdAt)).length,
                0,
                "no repair while backing off",
            );
        } finally {
            // Stops listening at once; probes still connected to it are cut rather than awaited.
            holder.close();
            for (const c of holderConnections) c.destroy();
        }
        const ok = await waitFor(
            "the retried heal",
            async () =>
                (await healOps()).find(
                    (o) =>
                        o.members.includes("web-0") && o.status === "succeeded" && Date.parse(o.createdAt) > killedAt,
                ),
            60_000,
        );
        assert.ok(Date.parse(ok.createdAt) >= retryAt, `retried no earlier than retryAt: ${ok.createdAt}`);
        const ops = (await healOps()).filter((o) => o.members.includes("web-0") && Date.parse(o.createdAt) >= killedAt);
        assert.equal(
            ops.length,
            2,
            `one failed repair, one retry: ${JSON.stringify(ops.map((o) => [o.status, o.createdAt]))}`,
        );
        await waitFor("web-0 healthy again", allHealthy(["web-0", "web-1", "web-2"]), 30_000);
    },
);

test("GET /v1/heal reports the loop; /v1/operations lists heal operations with members and reasons", async () => {
    const s = (await svc.call("GET", "/v1/heal", { token: TOKENS.discover })).body;
    assert.equal(s.enabled, true);
    assert.equal(s.intervalSeconds, ROUND_MS / 1000);
    assert.ok(s.lastRound && typeof s.lastRound.durationMs === "number", JSON.stringify(s));
    assert.deepEqual(s.providersDown, []);
    const ops = await healOps();
    assert.ok(ops.length >= 5);
    for (const o of ops) assert.deepEqual(Object.keys(o.reasons).sort(), [...o.members].sort());
});
