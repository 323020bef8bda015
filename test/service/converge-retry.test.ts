/**
 * A convergence that failed transiently is run again by the service itself (control/heal/convergence.ts),
 * on the real engine with real local proxies and nobody asking: the start-up `up` of a 2-member pool
 * fails because another process holds web-1's port (`[transient]`, EADDRINUSE), web-0 serves meanwhile,
 * the reconcile loop runs `up` again after the back-off (doubling while it keeps failing, shown by
 * GET /v1/heal), and once the port is free the stack converges, the retry ends and nothing else ran.
 * Before, the stack stayed one member short until someone scaled.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as net from "node:net";
import { freePortRange } from "../helpers/net";
import { startTestService, TestService, TOKENS } from "../helpers/service";
import { waitFor } from "../helpers/harness";

const BACKOFF = { baseMs: 3000, maxMs: 6000 };
let svc: TestService;
let basePort: number;
let holder: net.Server | undefined;
const held = new Set<net.Socket>();

before(async () => {
    basePort = await freePortRange(2);
    holder = net.createServer((c) => held.add(c));
    await new Promise<void>((resolve, reject) => {
        holder!.once("error", reject);
        holder!.listen(basePort + 1, "127.0.0.1", resolve);
    });
    svc = await startTestService(
        {
            "egress:providers": { local: { type: "local", basePort } },
            "egress:pools": [{ name: "web", provider: "local", replicas: 2, maxReplicas: 2 }],
        },
        { probeIntervalMs: 300, reconcileIntervalMs: 500, healBackoff: BACKOFF },
    );
});
after(async () => {
    release();
    await svc?.close();
});

function release(): void {
    holder?.close();
    for (const c of held) c.destroy();
    holder = undefined;
}

const ups = async () =>
    ((await svc.call("GET", "/v1/operations", { token: TOKENS.scale })).body.operations as any[])
        .filter((o) => o.kind === "up")
        .sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt));
const heal = async () => (await svc.call("GET", "/v1/heal", { token: TOKENS.discover })).body;
const proxies = async () => (await svc.call("GET", "/v1/proxies", { token: TOKENS.discover })).body.proxies as any[];

test(
    "a transient failure of the start-up `up` is retried after the back-off until the stack converges",
    { timeout: 180_000 },
    async () => {
        const failedUp = (n: number) =>
            waitFor(`${n} failed up(s)`, async () => {
                const list = (await ups()).filter((o) => o.status === "failed");
                return list.length >= n ? list : undefined;
            });
        const [first] = await failedUp(1);
        assert.match(
            first.error,
            /\[transient\] local proxy svc-web-1 did not start listening on port \d+: .*EADDRINUSE/,
        );
        const h1 = await heal();
        assert.ok(h1.convergence, `GET /v1/heal shows the retry: ${JSON.stringify(h1)}`);
        assert.equal(h1.convergence.failures, 1);
        assert.equal(h1.convergence.operation, first.id);
        assert.match(h1.convergence.error, /EADDRINUSE/);
        assert.ok(
            Date.parse(h1.convergence.retryAt) - Date.parse(first.finishedAt) >= BACKOFF.baseMs - 500,
            `retried about baseMs after the failure: ${h1.convergence.retryAt} vs ${first.finishedAt}`,
        );
        // web-0 was created and serves while web-1 waits.
        await waitFor(
            "web-0 healthy",
            async () => (await proxies()).find((p) => p.id === "web-0")?.health === "healthy",
        );

        // Still held: the retry fails too, no earlier than retryAt, and the next wait doubles.
        const [, second] = await failedUp(2);
        assert.ok(
            Date.parse(second.createdAt) >= Date.parse(h1.convergence.retryAt) - 50,
            `not before retryAt: ${second.createdAt} vs ${h1.convergence.retryAt}`,
        );
        const h2 = await waitFor("the second failure in /v1/heal", async () => {
            const h = await heal();
            return h.convergence?.operation === second.id ? h : undefined;
        });
        assert.equal(h2.convergence.failures, 2);
        assert.ok(
            Date.parse(h2.convergence.retryAt) - Date.parse(second.finishedAt) >= BACKOFF.maxMs - 500,
            `the back-off doubled (capped at maxMs): ${h2.convergence.retryAt} vs ${second.finishedAt}`,
        );
        assert.ok(
            svc.logs.some((l) => l.includes("running `up` again: the stack's last convergence failed transiently")),
            "the retry is logged with why",
        );

        // The port is free: the next retry converges, and the loop stops retrying.
        release();
        const ok = await waitFor(
            "a succeeded up",
            async () => (await ups()).find((o) => o.status === "succeeded"),
            60_000,
        );
        assert.ok(Date.parse(ok.createdAt) >= Date.parse(h2.convergence.retryAt) - 50, "after the back-off");
        await waitFor("both members healthy", async () => {
            const p = await proxies();
            return p.length === 2 && p.every((x) => x.health === "healthy");
        });
        assert.equal((await heal()).convergence, undefined, "the retry ended with the success");
        // Nothing else ran: three `up`s (failed, failed, succeeded) and no other operation.
        const all = (await svc.call("GET", "/v1/operations", { token: TOKENS.scale })).body.operations as any[];
        assert.deepEqual(
            all.map((o) => [o.kind, o.status]).sort(),
            [
                ["up", "failed"],
                ["up", "failed"],
                ["up", "succeeded"],
            ],
            JSON.stringify(all.map((o) => [o.kind, o.status, o.createdAt])),
        );
        // And stays so: a few more rounds queue nothing.
        await new Promise((r) => setTimeout(r, 2000));
        assert.equal((await ups()).length, 3);
    },
);
