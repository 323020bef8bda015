/**
 * /metrics on a real service follows Prometheus conventions (promtool agrees): base units, `_total`
 * counters, and no series left behind for pools, members and provider targets that went away.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { settledConverge, startTestService, TestService, TOKENS } from "../helpers/service";
import { proxyBasicAuth, startTargetServer, viaProxy } from "../helpers/net";
import {
    alertExprs,
    dashboardExprs,
    exportedNames,
    find,
    metricTypes,
    metricsIn,
    parseSamples,
    promtool,
} from "../helpers/metrics";
import { settled, teardown, waitFor } from "../helpers/harness";

const config = (pools: object[]) => ({
    "egress:providers": { local: { type: "local" } },
    "egress:pools": pools,
});
const both = [
    { name: "a", provider: "local", replicas: 2, maxReplicas: 4 },
    { name: "b", provider: "local", replicas: 1, maxReplicas: 4 },
];
let svc: TestService;
/** An origin on loopback (the gateway does not relay to the service's own API). */
let origin: Awaited<ReturnType<typeof startTargetServer>>;
const cleanup = teardown();
before(async () => {
    origin = await startTargetServer();
    cleanup.own(origin);
    svc = await startTestService(config(both), { gateway: { port: 0 } });
    cleanup.own(svc);
    await settledConverge(svc);
});

/** A GET through the rotating gateway to the test's origin; resolves with the status. */
const viaGateway = async (pool: string) =>
    (
        await viaProxy(
            svc.gatewayPort!,
            `http://127.0.0.1:${origin.port}/echo`,
            proxyBasicAuth(pool, TOKENS.lease)["proxy-authorization"],
        )
    ).status;

const scrape = async () => {
    const r = await fetch(`${svc.url}/metrics`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get("content-type") ?? "", /^text\/plain/);
    return r.text();
};

test("promtool check metrics passes on a scrape, and names follow the conventions", async () => {
    // Gateway series too (a request, its latency and bytes); once it went through, a's members are
    // healthy, so the lease below is granted (test 3 counts on pool a's `granted` series).
    await waitFor("a request through the gateway", async () => (await viaGateway("a")) === 200, 60_000, 200);
    assert.equal((await svc.call("POST", "/v1/leases", { token: TOKENS.lease, body: { pool: "a" } })).status, 201);
    await viaGateway("nope"); // a refusal
    const text = await scrape();
    const lint = promtool(["check", "metrics"], text);
    assert.equal(lint.code, 0, lint.out);
    assert.equal(lint.out.trim(), "", `promtool has no complaints:\n${lint.out}`);
    const types = metricTypes(text);
    for (const [name, type] of types) {
        if (type === "counter") assert.match(name, /_total$/, `counter ${name} ends in _total`);
        else assert.doesNotMatch(name, /_total$/, `${type} ${name} does not pretend to be a counter`);
        assert.doesNotMatch(name, /_(ms|milliseconds|millis)\b|_ms_/, `${name} is in base units`);
    }
    for (const name of [
        "egress_lease_latency_seconds",
        "egress_probe_latency_seconds",
        "egress_operation_duration_seconds",
        "egress_gateway_upstream_latency_seconds",
    ])
        assert.equal(types.get(name), "histogram", name);
    const samples = parseSamples(text);
    assert.equal(
        find(samples, "egress_gateway_requests_total", { pool: "a", kind: "http", outcome: "ok" })[0]?.value,
        1,
    );
    assert.equal(find(samples, "egress_gateway_upstream_latency_seconds_count", { pool: "a" })[0]?.value, 1);
    assert.ok(find(samples, "egress_gateway_bytes_total", { pool: "a", direction: "sent" })[0]?.value > 0);
    assert.equal(find(samples, "egress_gateway_refusals_total", { reason: "unknown_pool" })[0]?.value, 1);
    assert.ok(!text.includes("nope"), "a made-up pool mints no series");
});

test("provider health: up, check duration in seconds, last check time in unix seconds, per provider and per target", async () => {
    const samples = parseSamples(await scrape());
    const target = { provider: "local", target: "localhost" };
    assert.deepEqual(
        find(samples, "egress_provider_up").map((s) => [s.labels, s.value]),
        [[target, 1]],
    );
    for (const [name, labels] of [
        ["egress_provider_check_duration_seconds", { provider: "local" }],
        ["egress_provider_target_check_duration_seconds", target],
    ] as const) {
        assert.deepEqual(
            find(samples, name).map((s) => s.labels),
            [labels],
            name,
        );
        const [duration] = find(samples, name);
        assert.ok(duration.value >= 0 && duration.value < 30, `${name}: a duration in seconds (got ${duration.value})`);
    }
    for (const [name, labels] of [
        ["egress_provider_last_check_timestamp_seconds", { provider: "local" }],
        ["egress_provider_target_last_check_timestamp_seconds", target],
    ] as const) {
        assert.deepEqual(
            find(samples, name).map((s) => s.labels),
            [labels],
            name,
        );
        const [last] = find(samples, name);
        assert.ok(
            Math.abs(last.value - Date.now() / 1000) < 120,
            `${name}: a unix time in seconds near now (got ${last.value})`,
        );
    }
});

test(
    "pools and members: desired, per-member up; series of removed members and pools go away",
    { timeout: 240_000 },
    async () => {
        const up = async () => find(parseSamples(await scrape()), "egress_proxy_up");
        await waitFor(
            "every member probed healthy",
            async () => (await up()).length === 3 && (await up()).every((s) => s.value === 1),
            60_000,
            200,
        );
        let samples = parseSamples(await scrape());
        assert.deepEqual(
            find(samples, "egress_pool_desired_replicas")
                .map((s) => [s.labels.pool, s.value])
                .sort(),
            [
                ["a", 2],
                ["b", 1],
            ],
        );
        assert.deepEqual((await up()).map((s) => s.labels.proxy).sort(), ["a-0", "a-1", "b-0"]);
        await svc.call("POST", "/v1/leases", { token: TOKENS.lease, body: { pool: "b" } });
        assert.equal(
            find(parseSamples(await scrape()), "egress_leases_total", { pool: "b", result: "granted" })[0]?.value,
            1,
        );
        // b's only member is leased: the gateway answers 503, counted as b's `unavailable`; the series goes with b below.
        assert.equal(await viaGateway("b"), 503);
        assert.equal(
            find(parseSamples(await scrape()), "egress_gateway_requests_total", {
                pool: "b",
                outcome: "unavailable",
            })[0]?.value,
            1,
        );

        // A member leaves: its series goes with it.
        const down = await svc.call("PUT", "/v1/pools/a/replicas", { token: TOKENS.scale, body: { replicas: 1 } });
        assert.equal((await settled(svc, down.body.operation.id)).status, "succeeded");
        await waitFor(
            "a-1's series gone",
            async () => !(await up()).some((s) => s.labels.proxy === "a-1"),
            30_000,
            200,
        );
        assert.deepEqual((await up()).map((s) => s.labels.proxy).sort(), ["a-0", "b-0"]);

        // A pool leaves the config: its members, gauges and counters go with it.
        svc.project.writeConfig(config([{ ...both[0], replicas: 1 }]));
        const op = await svc.call("PUT", "/v1/pools/a/replicas", { token: TOKENS.scale, body: { replicas: 2 } });
        assert.equal((await settled(svc, op.body.operation.id)).status, "succeeded");
        await waitFor("pool b's series gone", async () => !(await scrape()).includes(`pool="b"`), 30_000, 200).catch(
            async (e) => {
                const left = (await scrape()).split("\n").filter((l) => l.includes(`pool="b"`));
                throw new Error(`${(e as Error).message}; still there: ${left.join(" | ")}`);
            },
        );
        samples = parseSamples(await scrape());
        assert.deepEqual(
            find(samples, "egress_pool_desired_replicas").map((s) => [s.labels.pool, s.value]),
            [["a", 2]],
        );
        assert.ok(
            find(samples, "egress_leases_total", { pool: "a", result: "granted" }).length === 1,
            `pool a keeps its counter: ${JSON.stringify(find(samples, "egress_leases_total"))}`,
        );
    },
);

test("a lease for a pool nobody configured mints no series", async () => {
    const r = await svc.call("POST", "/v1/leases", { token: TOKENS.lease, body: { pool: "no-such-pool" } });
    assert.equal(r.status, 404);
    assert.ok(!(await scrape()).includes("no-such-pool"));
});

test("deploy/'s Grafana dashboard and alert rules read only metrics this service exports", async () => {
    const exported = exportedNames(await scrape());
    for (const [what, exprs] of [
        ["dashboard", dashboardExprs()],
        ["alert rules", alertExprs()],
    ] as const) {
        const used = exprs.flatMap(metricsIn);
        assert.ok(used.length >= 5, `${what} reads metrics (${used.join(", ")})`);
        assert.deepEqual(
            [...new Set(used.filter((m) => !exported.has(m)))],
            [],
            `${what}: every metric is in a real scrape`,
        );
    }
});
