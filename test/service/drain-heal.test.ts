/**
 * Repairs and leases, on the real engine with real local proxies and the reconcile loop on: a leased
 * proxy that is gone (SIGKILL) is replaced at once and its lease ends with reason `gone`; a leased
 * proxy that hangs (SIGSTOP) shows `failed` with its probe error, then drains (drainSeconds) before it
 * is replaced, and its lease ends with reason `replaced`. Late releases answer 410 proxy_removed.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as path from "node:path";
import { startTestService, TestService, TOKENS } from "../helpers/service";
import { findProxyProcesses } from "../../components/local/process";
import { waitFor } from "../helpers/harness";

let svc: TestService;
const stopped: number[] = [];
before(async () => {
    svc = await startTestService(
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [
                {
                    name: "web",
                    provider: "local",
                    replicas: 2,
                    maxReplicas: 2,
                    replaceUnhealthyAfterSeconds: 2,
                    drainSeconds: 3,
                },
            ],
        },
        { probeIntervalMs: 300, reconcileIntervalMs: 500 },
    );
    await waitFor(
        "2 ready proxies",
        async () => {
            const p = await proxies();
            return p.length === 2 && p.every((x) => x.lifecycle === "ready");
        },
        60_000,
    );
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

const proxies = async () => (await svc.call("GET", "/v1/proxies", { token: TOKENS.discover })).body.proxies as any[];
const proxy = async (id: string) => (await proxies()).find((p) => p.id === id);
const release = (id: string) =>
    svc.call("POST", `/v1/leases/${id}/release`, { token: TOKENS.lease, body: { outcome: "ok" } });
const pidOf = (member: string) => {
    const pids = findProxyProcesses(path.join(svc.runDir, "local", "svc"), `svc-${member}`);
    assert.equal(pids.length, 1, `one process for ${member}`);
    return pids[0];
};
const healOf = (member: string, since: number) =>
    waitFor(
        `a settled heal of ${member}`,
        async () => {
            const ops = (await svc.call("GET", "/v1/operations", { token: TOKENS.scale })).body.operations as any[];
            return ops.find(
                (o) =>
                    o.kind === "heal" &&
                    o.members.includes(member) &&
                    Date.parse(o.createdAt) >= since &&
                    ["succeeded", "failed"].includes(o.status),
            );
        },
        90_000,
        100,
    );

/** Leases both members, keeps `member`'s lease. */
async function leaseMember(member: string): Promise<string> {
    const taken = [];
    for (let i = 0; i < 2; i++) {
        const r = await svc.call("POST", "/v1/leases", { token: TOKENS.lease, body: { pool: "web" } });
        assert.equal(r.status, 201, JSON.stringify(r.body));
        taken.push(r.body.lease);
    }
    for (const l of taken) if (l.proxy.id !== member) await release(l.id);
    return taken.find((l) => l.proxy.id === member).id;
}

test(
    "a leased proxy that is gone is replaced without a drain; its lease ends with reason gone",
    { timeout: 120_000 },
    async () => {
        const leaseId = await leaseMember("web-1");
        const at = Date.now();
        process.kill(pidOf("web-1"), "SIGKILL");
        const op = await healOf("web-1", at);
        assert.equal(op.status, "succeeded", op.error);
        assert.equal(op.reasons["web-1"].reason, "gone");
        assert.equal(op.drain?.members.length ?? 0, 0, "gone members do not drain");
        const late = await release(leaseId);
        assert.equal(late.status, 410);
        assert.equal(late.body.error.code, "proxy_removed");
        assert.equal(late.body.error.details.reason, "gone");
        assert.match(
            late.body.error.message,
            /member web-1 was gone \(no process of local proxy svc-web-1 is running\) and is being replaced/,
        );
        await waitFor("web-1 ready again", async () => (await proxy("web-1"))?.lifecycle === "ready", 30_000);
    },
);

test(
    "a leased proxy that hangs: failed with its probe error, then draining for drainSeconds, then replaced; its lease ends with reason replaced",
    { timeout: 120_000 },
    async () => {
        const leaseId = await leaseMember("web-0");
        const hung = pidOf("web-0");
        stopped.push(hung);
        const at = Date.now();
        process.kill(hung, "SIGSTOP");
        const failed = await waitFor(
            "web-0 failed",
            async () => {
                const p = await proxy("web-0");
                return p?.lifecycle === "failed" ? p : undefined;
            },
            60_000,
            50,
        );
        assert.equal(failed.health, "unhealthy");
        assert.ok(failed.lastError, "the probe error is shown");
        const draining = await waitFor(
            "web-0 draining",
            async () => {
                const p = await proxy("web-0");
                return p?.lifecycle === "draining" ? p : undefined;
            },
            60_000,
            50,
        );
        assert.equal(draining.leased, true, "its lease runs on while it drains");
        const op = await healOf("web-0", at);
        assert.equal(op.status, "succeeded", op.error);
        assert.deepEqual(
            op.drain.members.map((m: any) => [m.member, m.reason, m.state]),
            [["web-0", "replaced", "timed-out"]],
        );
        assert.ok(
            Date.parse(op.drain.members[0].until) - Date.parse(op.startedAt) >= 2500,
            "drained about drainSeconds (3 s)",
        );
        const late = await release(leaseId);
        assert.equal(late.status, 410);
        assert.equal(late.body.error.details.reason, "replaced");
        assert.match(
            late.body.error.message,
            /member web-0 was replaced \(unhealthy for \d+ s \(limit 2 s\).*\); its lease outlived drainSeconds/,
        );
        await waitFor("web-0 ready again", async () => (await proxy("web-0"))?.lifecycle === "ready", 30_000);
        assert.notEqual(pidOf("web-0"), hung);
    },
);
