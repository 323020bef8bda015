/**
 * A SIGKILL of `egress serve` in the middle of a scale-down's drain. Drain state lives in memory, but
 * the new count is in the stack file from the moment the operation starts, and leases do not survive a
 * restart either: the next start's convergence applies the scale-down at once (nothing left to wait
 * for). Nothing leaks: the proxy processes are exactly what state lists, no engine process or lock of
 * the dead service is left, and the desired count is reached.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { cli, killServices, procProject, ProcProject, proxyProcesses, serve } from "../helpers/processes";
import { assertNothingLeaked } from "../helpers/restart-checks";
import { settled, waitFor } from "../helpers/harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 3, maxReplicas: 4, drainSeconds: 600 }],
};
let p: ProcProject;
before(() => (p = procProject("drk", config)));
after(async () => {
    killServices();
    cli(p, ["destroy", "--yes", "--quiet"]);
    assert.deepEqual([...proxyProcesses(p).keys()], [], "destroy leaves no proxy running");
    p.cleanup();
});

const converged = async (svc: Awaited<ReturnType<typeof serve>>) => {
    const ops = (await svc.call("GET", "/v1/operations")).body.operations as {
        id: string;
        kind: string;
        createdAt: string;
        status: string;
    }[];
    const up = ops.filter((o) => o.kind === "up").sort((a, b) => b.createdAt.localeCompare(a.createdAt))[0];
    assert.ok(up, "the start converges");
    return settled(svc, up.id);
};

test(
    "kill -9 mid-drain, restart: the scale-down proceeds, nothing leaked, the desired count is reached",
    { timeout: 240_000 },
    async () => {
        const first = await serve(p);
        assert.equal((await converged(first)).status, "succeeded");
        await waitFor(
            "3 healthy proxies",
            async () => {
                const px = (await first.call("GET", "/v1/proxies")).body.proxies as any[];
                return px.length === 3 && px.every((x) => x.health === "healthy");
            },
            30_000,
            100,
        );
        // Lease every member, keep web-2's lease.
        const leases = [];
        for (let i = 0; i < 3; i++)
            leases.push((await first.call("POST", "/v1/leases", { body: { pool: "web" } })).body.lease);
        for (const l of leases)
            if (l.proxy.id !== "web-2")
                assert.equal(
                    (await first.call("POST", `/v1/leases/${l.id}/release`, { body: { outcome: "ok" } })).status,
                    200,
                );

        const r = await first.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 2 } });
        assert.equal(r.status, 202);
        const draining = await waitFor(
            "the scale-down draining web-2",
            async () => {
                const op = (await first.call("GET", `/v1/operations/${r.body.operation.id}`)).body.operation;
                return op.drain?.draining ? op : undefined;
            },
            30_000,
            50,
        );
        assert.deepEqual(
            draining.drain.members.map((m: any) => [m.member, m.state]),
            [["web-2", "waiting"]],
        );
        assert.equal(
            (await first.call("GET", "/v1/proxies")).body.proxies.find((x: any) => x.id === "web-2").lifecycle,
            "draining",
        );
        assert.equal(p.replicas("web"), 2, "the new count is in the stack file before the drain ends");

        first.child.kill("SIGKILL");
        await first.exited;
        assert.equal(proxyProcesses(p).size, 3, "the kill took nothing with it: web-2 still runs");

        const t0 = Date.now();
        const second = await serve(p);
        const interrupted = (await second.call("GET", `/v1/operations/${r.body.operation.id}`)).body.operation;
        assert.equal(interrupted.status, "interrupted");
        const up = await converged(second);
        assert.equal(up.status, "succeeded", up.error);
        assert.deepEqual(
            up.drain.members.map((m: any) => [m.member, m.state]),
            [["web-2", "idle"]],
            "no lease survived the restart: nothing to wait for",
        );
        process.stdout.write(`# restart → scale-down applied: ${Date.now() - t0} ms\n`);

        const state = await assertNothingLeaked(p, second, first.child.pid!);
        assert.deepEqual(state, ["web-0", "web-1"], "the desired count is reached");
        // The crawler's lease from the dead service is unknown to the new one, like every lease across a restart.
        const late = await second.call("POST", `/v1/leases/${leases.find((l) => l.proxy.id === "web-2").id}/release`, {
            body: { outcome: "ok" },
        });
        assert.equal(late.status, 404);
        second.child.kill("SIGTERM");
        await second.exited;
    },
);
