/**
 * ProviderHealth's series: up, check duration and last check per provider and per target; targets and
 * providers that go away take their series along; interval 0 is off.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import pino from "pino";
import { createMetrics } from "../../src/service/observe/metrics";
import { ProviderHealth } from "../../src/service/observe/provider-checks";
import type { Checker, CheckVerdict } from "../../components/kind";
import { checkEach } from "../../components/shared/check-each";

const log = pino({ level: "silent" });

/** A checker whose verdicts the test sets: the unit under test is ProviderHealth, not a provider. */
function checker(provider: string, verdicts: () => CheckVerdict[]): Checker {
    return { provider, kind: "kvm", check: async () => verdicts() };
}

const series = async (metrics: ReturnType<typeof createMetrics>, name: string) =>
    (await metrics.registry.getSingleMetric(name)!.get()).values.map((v) => ({ labels: v.labels, value: v.value }));

test("a target the checker stops reporting, and a provider removed from config, leave no series", async () => {
    const metrics = createMetrics();
    const ph = new ProviderHealth({ log, metrics, intervalMs: 60_000, timeoutMs: 1000 });
    let targets = ["host-a", "host-b"];
    const kvm = checker("kvm1", () => targets.map((t) => ({ target: t, ok: t === "host-a", message: "x" })));
    ph.setCheckers([kvm, checker("kvm2", () => [{ target: "host-c", ok: true, message: "ok" }])]);
    await ph.runOnce();
    assert.deepEqual(
        (await series(metrics, "egress_provider_up")).map((s) => [s.labels.provider, s.labels.target, s.value]),
        [
            ["kvm1", "host-a", 1],
            ["kvm1", "host-b", 0],
            ["kvm2", "host-c", 1],
        ],
    );
    assert.equal((await series(metrics, "egress_provider_check_duration_seconds")).length, 2);

    targets = ["host-a"];
    await ph.runOnce();
    assert.deepEqual(
        (await series(metrics, "egress_provider_up")).map((s) => s.labels.target),
        ["host-a", "host-c"],
    );

    for (const name of [
        "egress_provider_target_check_duration_seconds",
        "egress_provider_target_last_check_timestamp_seconds",
    ])
        assert.deepEqual(
            (await series(metrics, name)).map((s) => s.labels.target),
            ["host-a", "host-c"],
            name,
        );

    ph.setCheckers([kvm]);
    for (const name of [
        "egress_provider_up",
        "egress_provider_check_duration_seconds",
        "egress_provider_last_check_timestamp_seconds",
        "egress_provider_target_check_duration_seconds",
        "egress_provider_target_last_check_timestamp_seconds",
    ])
        assert.deepEqual(
            (await series(metrics, name)).map((s) => s.labels.provider),
            ["kvm1"],
            name,
        );
});

test("per-target gauges: each target's own check duration (checkEach) and when it finished", async () => {
    const metrics = createMetrics();
    const ph = new ProviderHealth({ log, metrics, intervalMs: 60_000, timeoutMs: 5000 });
    const delays: Record<string, number> = { fast: 10, slow: 300 };
    ph.setCheckers([
        {
            provider: "kvm1",
            kind: "kvm",
            check: () =>
                checkEach(Object.keys(delays), async (t) => {
                    await new Promise((r) => setTimeout(r, delays[t]));
                    return { target: t, ok: true, message: "ok" };
                }),
        },
        checker("single", () => [{ target: "only", ok: true, message: "ok" }]),
    ]);
    const before = Date.now() / 1000;
    await ph.runOnce();
    const duration = new Map(
        (await series(metrics, "egress_provider_target_check_duration_seconds")).map((s) => [s.labels.target, s.value]),
    );
    assert.ok(
        duration.get("fast")! >= 0.005 && duration.get("fast")! < 0.2,
        `fast: its own 10 ms, in seconds (got ${duration.get("fast")})`,
    );
    assert.ok(
        duration.get("slow")! >= 0.29 && duration.get("slow")! < 2,
        `slow: its own 300 ms (got ${duration.get("slow")})`,
    );
    const whole = new Map(
        (await series(metrics, "egress_provider_check_duration_seconds")).map((s) => [s.labels.provider, s.value]),
    );
    assert.ok(
        whole.get("kvm1")! >= duration.get("slow")!,
        `the provider's duration covers its slowest target (${whole.get("kvm1")} s)`,
    );
    // A verdict without its own time gets the provider's whole check time.
    assert.equal(duration.get("only"), whole.get("single"));
    for (const s of await series(metrics, "egress_provider_target_last_check_timestamp_seconds"))
        assert.ok(
            s.value >= before && s.value <= Date.now() / 1000,
            `${s.labels.target}: finished during the round, in unix seconds (got ${s.value})`,
        );
    assert.deepEqual(
        ph.snapshot()[0].targets.map((t) => Object.keys(t).includes("durationMs")),
        [false, false],
        "reports keep their shape (the API schema)",
    );
});

test("the timeout reaches the checker; a check that overruns it is a failed verdict", async () => {
    const metrics = createMetrics();
    const ph = new ProviderHealth({ log, metrics, intervalMs: 60_000, timeoutMs: 50 });
    ph.setCheckers([
        {
            provider: "slow",
            kind: "kvm",
            check: (signal) =>
                new Promise((_, reject) =>
                    signal!.addEventListener("abort", () => reject(new Error("aborted by the check timeout"))),
                ),
        },
    ]);
    const keepAlive = setInterval(() => undefined, 1000); // the abort timer is unref'd
    await ph.runOnce().finally(() => clearInterval(keepAlive));
    const [report] = ph.snapshot();
    assert.equal(report.ok, false);
    assert.match(report.targets[0].message, /aborted by the check timeout/);
    const [d] = await series(metrics, "egress_provider_check_duration_seconds");
    assert.ok(d.value >= 0.04 && d.value < 5, `about the 50 ms timeout, in seconds (got ${d.value})`);
});

test("interval 0 is off: no checks, no series, and an empty snapshot (nothing reported down)", async () => {
    const metrics = createMetrics();
    let calls = 0;
    const ph = new ProviderHealth({ log, metrics, intervalMs: 0, timeoutMs: 1000 });
    ph.setCheckers([checker("kvm1", () => (calls++, [{ target: "h", ok: false, message: "down" }]))]);
    ph.start();
    await new Promise((r) => setTimeout(r, 50));
    await ph.stop();
    assert.equal(calls, 0);
    assert.deepEqual(ph.snapshot(), []);
    assert.deepEqual(await series(metrics, "egress_provider_up"), []);
});

test("a checker that ignores its signal is not waited for past the timeout: its targets get timeout verdicts", async () => {
    const metrics = createMetrics();
    const ph = new ProviderHealth({ log, metrics, intervalMs: 60_000, timeoutMs: 100 });
    let hang = false;
    ph.setCheckers([
        {
            provider: "deaf",
            kind: "kvm",
            check: () =>
                hang
                    ? new Promise<CheckVerdict[]>(() => undefined)
                    : Promise.resolve([
                          { target: "h1", ok: true, message: "ok" },
                          { target: "h2", ok: true, message: "ok" },
                      ]),
        },
    ]);
    await ph.runOnce();
    hang = true;
    const keepAlive = setInterval(() => undefined, 1000);
    const t0 = Date.now();
    await ph.runOnce().finally(() => clearInterval(keepAlive));
    const elapsed = Date.now() - t0;
    assert.ok(elapsed < 5000, `the round ended at the timeout plus its grace, not never (${elapsed} ms)`);
    const [report] = ph.snapshot();
    assert.deepEqual(
        report.targets.map((t) => [t.target, t.ok, t.stage]),
        [
            ["h1", false, "timeout"],
            ["h2", false, "timeout"],
        ],
    );
    assert.match(
        report.targets[0].message,
        /^no verdict within the 100 ms provider check timeout \(--provider-check-timeout\); the checker did not stop when told to$/,
    );
});

test("verdicts a checker hands over early are published before its check ends", async () => {
    const ph = new ProviderHealth({ log, metrics: createMetrics(), intervalMs: 60_000, timeoutMs: 10_000 });
    let finish!: () => void;
    const published = new Promise<void>((resolve) => {
        ph.setCheckers([
            {
                provider: "two",
                kind: "kvm",
                check: (_signal, onVerdict) => {
                    const fast = { target: "fast", ok: true, message: "ok" };
                    onVerdict!(fast);
                    resolve();
                    return new Promise(
                        (r) => (finish = () => r([fast, { target: "slow", ok: false, stage: "tcp", message: "down" }])),
                    );
                },
            },
        ]);
    });
    const round = ph.runOnce();
    await published;
    assert.deepEqual(
        ph.snapshot()[0].targets.map((t) => [t.target, t.ok]),
        [["fast", true]],
        "the fast target is there while the slow one runs",
    );
    finish();
    await round;
    const [report] = ph.snapshot();
    assert.deepEqual(
        report.targets.map((t) => [t.target, t.ok]),
        [
            ["fast", true],
            ["slow", false],
        ],
    );
    assert.equal(report.ok, false);
});
