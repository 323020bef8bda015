/**
 * Autoscaling on the real engine with real local proxies and short intervals: held leases and refused
 * requests grow a pool in one decision; once they are released it shrinks after scaleDownAfterSeconds
 * through the drained scale-down; a steady load makes no further decisions; an empty `min: 0` pool is
 * woken by its first request; manual scale requests are refused while a pool is autoscaled.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { convergedOk, startTestService, TestService, TOKENS } from "../helpers/service";
import { proxyBasicAuth, startTargetServer, viaProxy } from "../helpers/net";
import { settled, sleep, teardown, waitFor } from "../helpers/harness";

const WEB = { min: 1, max: 6, targetUtilization: 0.5, scaleDownAfterSeconds: 8, cooldownSeconds: 4 };
let svc: TestService;
/** An origin on loopback for gateway requests (the gateway does not relay to the service's own API). */
let origin: Awaited<ReturnType<typeof startTargetServer>>;
const cleanup = teardown();
before(async () => {
    origin = await startTargetServer();
    cleanup.own(origin);
    svc = await startTestService(
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [
                { name: "web", provider: "local", replicas: 1, maxReplicas: 6, drainSeconds: 60, autoscale: WEB },
                {
                    name: "idle",
                    provider: "local",
                    replicas: 0,
                    maxReplicas: 2,
                    autoscale: { min: 0, max: 2, targetUtilization: 1, scaleDownAfterSeconds: 600, cooldownSeconds: 4 },
                },
                {
                    name: "edge",
                    provider: "local",
                    replicas: 0,
                    maxReplicas: 1,
                    autoscale: { min: 0, max: 1, targetUtilization: 1, scaleDownAfterSeconds: 600, cooldownSeconds: 4 },
                },
            ],
        },
        // waitMs 0: the gateway answers a busy or empty pool at once (its waiting room would hold the request
        // while the pool wakes, which is the better answer for crawlers but hides the 503 this test checks).
        { autoscaleIntervalMs: 500, autoscaleWindowMs: 2000, gateway: { port: 0, waitMs: 0 } },
    );
    cleanup.own(svc);
    await convergedOk(svc);
    await waitFor("web-0 healthy", async () => (await pool("web")).healthy === 1, 30_000);
});

const pool = async (name: string) =>
    (await svc.call("GET", "/v1/pools", { token: TOKENS.discover })).body.pools.find((p: any) => p.name === name);
const lease = (name: string) => svc.call("POST", "/v1/leases", { token: TOKENS.lease, body: { pool: name } });
const release = (id: string) =>
    svc.call("POST", `/v1/leases/${id}/release`, { token: TOKENS.lease, body: { outcome: "ok" } });
const autoscaleOps = async (name: string) =>
    ((await svc.call("GET", "/v1/operations", { token: TOKENS.scale })).body.operations as any[]).filter(
        (o) => o.kind === "autoscale" && o.autoscale?.[name],
    );

test("PUT replicas on an autoscaled pool: 409 autoscaled, naming where the bounds live", async () => {
    const r = await svc.call("PUT", "/v1/pools/web/replicas", { token: TOKENS.scale, body: { replicas: 3 } });
    assert.equal(r.status, 409);
    assert.equal(r.body.error.code, "autoscaled");
    assert.match(r.body.error.message, /autoscaled \(min 1, max 6\).*egress:pools\[0\]\.autoscale.*Pulumi\.svc\.yaml/);
    const p = await pool("web");
    assert.equal(p.scalable, false);
    assert.deepEqual(
        { ...p.autoscale, signals: undefined, lastDecision: undefined },
        {
            ...WEB,
            signals: undefined,
            lastDecision: undefined,
        },
    );
});

test("3 held leases grow 1 → 6 in one decision; released, it drains back to 1; a steady load holds", async () => {
    const held: { id: string; proxy: string; index: number }[] = [];
    let refused = 0;
    const t0 = Date.now();
    // Three crawlers that want a proxy each and retry every 250 ms while none is free.
    await waitFor(
        "3 leases held",
        async () => {
            const r = await lease("web");
            if (r.status === 503) {
                refused++;
                assert.equal(r.body.error.code, "none_available");
                assert.ok(Number(r.headers.get("retry-after")) >= 1);
            } else {
                assert.equal(r.status, 201);
                const id = r.body.lease.proxy.id as string;
                held.push({ id: r.body.lease.id, proxy: id, index: Number(id.split("-").pop()) });
            }
            return held.length === 3;
        },
        120_000,
        250,
    );
    assert.ok(refused > 0, "the crawlers were refused before the pool grew");
    const ups = await autoscaleOps("web");
    assert.equal(
        ups.length,
        1,
        `one decision, straight to ceil(3 / 0.5) = 6: ${JSON.stringify(ups.map((o) => o.autoscale))}`,
    );
    const up = ups[0];
    assert.equal(up.desired.web, 6);
    assert.equal((await settled(svc, up.id)).status, "succeeded");
    const why = up.autoscale.web;
    assert.equal(why.from, 1);
    assert.equal(why.to, 6);
    assert.ok(why.signals.refusedLeases > 0, JSON.stringify(why));
    assert.match(why.reasons.join("; "), /above target/);
    // Within cooldown + one engine run of the first refusal (with slack for a loaded 2-core machine).
    const grownIn = Date.now() - t0;
    assert.ok(grownIn < WEB.cooldownSeconds * 1000 + 90_000, `grew in ${grownIn} ms`);
    let p = await waitFor("6 healthy", async () => ((await pool("web")).healthy === 6 ? pool("web") : undefined));
    assert.equal(p.leased, 3);
    assert.equal(p.autoscale.lastDecision.operation, up.id);

    // Steady: 3 of 6 leased is on target; no decision for several cooldowns and longer than scaleDownAfterSeconds.
    await sleep((WEB.scaleDownAfterSeconds + 2 * WEB.cooldownSeconds) * 1000);
    assert.equal((await autoscaleOps("web")).length, 1, "a steady load makes no more decisions");
    p = await pool("web");
    assert.equal(p.desired, 6);
    assert.match(p.autoscale.signals.holding, /on target|within 10%/);

    // Release all but a member the next scale-down removes: it is drained, not cut.
    held.sort((a, b) => b.index - a.index);
    const [kept, ...rest] = held;
    assert.ok(kept.index >= 2, "three leases cannot all sit on web-0 and web-1");
    for (const l of rest) assert.equal((await release(l.id)).status, 200);
    const down = await waitFor(
        `a scale-down decision draining ${kept.proxy}`,
        async () => {
            const op = (await autoscaleOps("web")).find((o) => o.desired.web < 6);
            return op?.drain?.members?.some((m: any) => m.member === kept.proxy && m.state === "waiting") && op;
        },
        WEB.scaleDownAfterSeconds * 1000 + 30_000,
        250,
    ).catch(async (e) => {
        throw new Error(
            `${e.message}; web: ${JSON.stringify(await pool("web"))}; ops: ${JSON.stringify(await autoscaleOps("web"))}`,
        );
    });
    assert.equal(down.desired.web, 2, "one held lease at 0.5 wants 2");
    assert.match(down.autoscale.web.reasons.join("; "), /below target for \d+s/);
    assert.equal((await release(kept.id)).status, 200, "drained, not cut: its release still answers 200");
    assert.equal((await settled(svc, down.id)).status, "succeeded");
    const last = await waitFor(
        "back to 1",
        async () => (await autoscaleOps("web")).find((o) => o.desired.web === 1),
        WEB.scaleDownAfterSeconds * 1000 + 60_000,
        250,
    );
    assert.equal((await settled(svc, last.id)).status, "succeeded");
    p = await pool("web");
    assert.equal(p.actual, 1);
    assert.equal(p.desired, 1);
    const before = (await autoscaleOps("web")).length;
    await sleep((WEB.scaleDownAfterSeconds + WEB.cooldownSeconds) * 1000);
    assert.equal((await autoscaleOps("web")).length, before, "idle at min: no more decisions");
    const metrics = (await svc.call("GET", "/metrics", { token: TOKENS.admin })).body as string;
    assert.match(metrics, /egress_autoscale_decisions_total\{pool="web",direction="up"\} 1/);
    assert.match(metrics, /egress_autoscale_decisions_total\{pool="web",direction="down"\} 2/);
});

test("min 0: the first request gets 503 + Retry-After and wakes the pool; a lease follows within one engine run", async () => {
    assert.equal((await pool("idle")).actual, 0);
    const first = await lease("idle");
    assert.equal(first.status, 503);
    assert.equal(first.body.error.code, "none_available");
    assert.ok(Number(first.headers.get("retry-after")) >= 1);
    const [wake] = await autoscaleOps("idle");
    assert.ok(wake, "the refusal queued a scale-up at once, not at the next round");
    assert.equal(wake.desired.idle, 1);
    assert.match(wake.autoscale.idle.reasons.join("; "), /empty .* waking it/);
    assert.equal((await settled(svc, wake.id)).status, "succeeded");
    const got = await waitFor("a lease on the woken pool", async () => {
        const r = await lease("idle");
        return r.status === 201 && r.body;
    });
    assert.equal(got.lease.proxy.id, "idle-0");
    assert.equal((await autoscaleOps("idle")).length, 1, "later refusals while it woke added no decision");
    assert.equal((await release(got.lease.id)).status, 200);
});

test("min 0 behind the gateway: a request that found no member wakes the pool, counted as a gateway refusal", async () => {
    const auth = proxyBasicAuth("edge", TOKENS.lease)["proxy-authorization"];
    const echo = `http://127.0.0.1:${origin.port}/echo`;
    const first = await viaProxy(svc.gatewayPort!, echo, auth);
    assert.equal(first.status, 503);
    assert.equal(first.headers["x-egress-error"], "none_available");
    assert.ok(Number(first.headers["retry-after"]) >= 1);
    const [wake] = await autoscaleOps("edge");
    assert.ok(wake, "the gateway's refusal queued a scale-up at once");
    assert.equal(wake.desired.edge, 1);
    assert.equal(wake.autoscale.edge.signals.refusedGateway, 1);
    assert.equal(wake.autoscale.edge.signals.refusedLeases, 0);
    assert.equal((await settled(svc, wake.id)).status, "succeeded");
    await waitFor("a request served through the woken pool", async () => {
        const r = await viaProxy(svc.gatewayPort!, echo, auth);
        return r.status === 200;
    });
});
