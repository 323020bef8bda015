import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { PoolCounts } from "../fleet/fleet";
import { createGatewayMetrics } from "./gateway-metrics";
import { createPolitenessMetrics } from "./politeness-metrics";

/** What the scrape-time gauges read: the fleet as it is now, so a series never outlives its pool or member. */
export interface MetricsSource {
    /** Configured pools with their desired replicas. */
    pools(): { name: string; desired: number }[];
    poolCounts(): Record<string, PoolCounts>;
    members(): { id: string; pool: string; healthy: boolean }[];
}

const LEASE_RESULTS = ["granted", "unavailable"] as const;
export const SESSION_RESULTS = ["kept", "rebound", "new"] as const;
export type SessionResult = (typeof SESSION_RESULTS)[number];
const HEAL_REASONS = ["gone", "unhealthy"] as const;
const AUTOSCALE_DIRECTIONS = ["up", "down"] as const;
const ROTATION_REASONS = ["age", "blocked"] as const;

/**
 * Every metric the service exports at /metrics, on one registry (one per app: tests run several).
 * Prometheus conventions (docs/operations.md lists them): base units (seconds), `_total` counters,
 * `_timestamp_seconds` for times. Series labelled by something that can go away are dropped with it:
 * pool and member gauges are rebuilt at scrape time, pool-labelled counters lose a removed pool's series,
 * and provider-health series go with their provider or target (provider-health.ts).
 */
export function createMetrics(source?: MetricsSource) {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry, prefix: "egress_process_" });
    gaugesWithoutTotal(registry);
    const livePools = source && (() => new Set(source.pools().map((p) => p.name)));
    const politeness = createPolitenessMetrics(registry, livePools);
    return {
        registry,
        ...poolDecisionCounters(registry, source),
        ...leaseTimings(registry),
        ...fleetGauges(registry, source),
        ...probeAndOperationMetrics(registry),
        /** The rotating gateway's requests, upstream latency and bytes per pool (gateway/metrics.ts). */
        gateway: createGatewayMetrics(registry, livePools, politeness),
        politeness,
        ...providerHealthMetrics(registry),
    };
}

/**
 * A counter by pool and one other label whose series go with their pool: a pool no longer configured loses
 * them at the next scrape (a pool scaled to 0 keeps its series). Returns the function that counts one.
 * Pool `"*"` (a lease for any pool) is never a configured pool, so it is never dropped.
 */
function poolCounter<V extends string>(
    registry: Registry,
    source: MetricsSource | undefined,
    metric: { name: string; help: string; label: string; values: readonly V[] },
): (pool: string, value: V) => void {
    const pools = new Set<string>();
    const counter = new Counter({
        name: metric.name,
        help: metric.help,
        labelNames: ["pool", metric.label],
        registers: [registry],
        collect() {
            if (!source) return;
            const live = new Set(source.pools().map((p) => p.name));
            for (const pool of pools) {
                if (live.has(pool)) continue;
                for (const v of metric.values) counter.remove({ pool, [metric.label]: v });
                pools.delete(pool);
            }
        },
    });
    return (pool, value) => {
        if (pool !== "*") pools.add(pool);
        counter.inc({ pool, [metric.label]: value });
    };
}

/** What the lease path and the control loops decided, per pool: leases, sessions, heals, scale decisions, rotations. */
function poolDecisionCounters(registry: Registry, source: MetricsSource | undefined) {
    const counter = <V extends string>(name: string, help: string, label: string, values: readonly V[]) =>
        poolCounter(registry, source, { name, help, label, values });
    const lease = counter(
        "egress_leases_total",
        'Lease requests by pool and result (granted, unavailable); pool "*" is any pool',
        "result",
        LEASE_RESULTS,
    );
    const session = counter(
        "egress_lease_sessions_total",
        "Granted leases that named a sticky session, by pool and result: kept (its proxy again), rebound (moved to another proxy), new (the session's first lease)",
        "result",
        SESSION_RESULTS,
    );
    const heal = counter(
        "egress_heals_total",
        'Member repairs started by the reconcile loop, by pool and reason (gone, unhealthy); outcomes are egress_operations_total{kind="heal"}',
        "reason",
        HEAL_REASONS,
    );
    const autoscale = counter(
        "egress_autoscale_decisions_total",
        'Scale decisions of the autoscaler, by pool and direction (up, down); their runs are egress_operations_total{kind="autoscale"}',
        "direction",
        AUTOSCALE_DIRECTIONS,
    );
    const rotation = counter(
        "egress_rotations_total",
        'Members queued for rotation, by pool and reason (age, blocked); their runs are egress_operations_total{kind="rotate"}',
        "reason",
        ROTATION_REASONS,
    );
    const poolWideBlocks = new Counter({
        name: "egress_rotation_pool_wide_blocks_total",
        help: "Pool-wide blocks that began: more than half of a pool's members tripped rotateOnBlocks at once, so none was replaced (GET /v1/pools rotation.poolWideBlock)",
        labelNames: ["pool"],
        registers: [registry],
    });
    const reusedIps = new Counter({
        name: "egress_rotation_reused_ips_total",
        help: "Rotated members whose replacement exits through an IP the pool had within its ipMemorySeconds",
        labelNames: ["pool"],
        registers: [registry],
    });
    return {
        /** Counts a lease request (remembering the pool so its series can be dropped with it). */
        lease,
        /** Counts a granted session lease under the pool of the proxy it got (never a caller-made name). */
        session,
        heal,
        autoscale,
        rotation,
        /** A pool-wide block began (rotate/view.ts): more than half of the pool's members tripped rotateOnBlocks. */
        poolWideBlock(pool: string): void {
            poolWideBlocks.inc({ pool });
        },
        /** A rotation's replacement came back with an IP the pool had within its ipMemorySeconds. */
        reusedIp(pool: string): void {
            reusedIps.inc({ pool });
        },
    };
}

/** Releases by outcome and how long choosing a proxy took. */
function leaseTimings(registry: Registry) {
    return {
        releases: new Counter({
            name: "egress_lease_releases_total",
            help: "Lease releases by outcome",
            labelNames: ["outcome"],
            registers: [registry],
        }),
        leaseLatency: new Histogram({
            name: "egress_lease_latency_seconds",
            help: "Time to select a proxy for a lease",
            buckets: [0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01],
            registers: [registry],
        }),
    };
}

/** The fleet as it is at scrape time (MetricsSource): rebuilt on every scrape, so pools and members that left have no series. */
function fleetGauges(registry: Registry, source: MetricsSource | undefined) {
    return {
        proxies: new Gauge({
            name: "egress_proxies",
            help: "Proxies by pool and state (healthy, unhealthy, unknown, leased)",
            labelNames: ["pool", "state"],
            registers: [registry],
            collect() {
                if (!source) return;
                this.reset(); // pools that disappeared drop out
                const counts = source.poolCounts();
                const zero = { healthy: 0, unhealthy: 0, unknown: 0, leased: 0 };
                for (const pool of new Set([...source.pools().map((p) => p.name), ...Object.keys(counts)]))
                    for (const state of ["healthy", "unhealthy", "unknown", "leased"] as const)
                        this.set({ pool, state }, (counts[pool] ?? zero)[state]);
            },
        }),
        desired: new Gauge({
            name: "egress_pool_desired_replicas",
            help: "Replicas each configured pool should have",
            labelNames: ["pool"],
            registers: [registry],
            collect() {
                if (!source) return;
                this.reset();
                for (const p of source.pools()) this.set({ pool: p.name }, p.desired);
            },
        }),
        proxyUp: new Gauge({
            name: "egress_proxy_up",
            help: "1 when the member's health probes pass, by pool and proxy (members that left have no series)",
            labelNames: ["pool", "proxy"],
            registers: [registry],
            collect() {
                if (!source) return;
                this.reset();
                for (const m of source.members()) this.set({ pool: m.pool, proxy: m.id }, m.healthy ? 1 : 0);
            },
        }),
    };
}

/** Health probes through the proxies, and the engine's operations. */
function probeAndOperationMetrics(registry: Registry) {
    return {
        probes: new Counter({
            name: "egress_probes_total",
            help: "Health probes through proxies by result",
            labelNames: ["result"],
            registers: [registry],
        }),
        probeLatency: new Histogram({
            name: "egress_probe_latency_seconds",
            help: "Health probe round trip through the proxy",
            buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
            registers: [registry],
        }),
        operations: new Counter({
            name: "egress_operations_total",
            help: "Engine operations by kind and result",
            labelNames: ["kind", "result"],
            registers: [registry],
        }),
        operationDuration: new Histogram({
            name: "egress_operation_duration_seconds",
            help: "Engine operation duration",
            labelNames: ["kind"],
            buckets: [1, 2, 5, 10, 30, 60, 120, 300, 600, 1800],
            registers: [registry],
        }),
    };
}

/** The provider checks' results (provider-health.ts sets them and drops a provider's or target's series). */
function providerHealthMetrics(registry: Registry) {
    const gauge = <L extends string>(name: string, help: string, labelNames: L[]) =>
        new Gauge<L>({ name, help, labelNames, registers: [registry] });
    return {
        providerUp: gauge("egress_provider_up", "1 when the provider target passed its last check", [
            "provider",
            "target",
        ]),
        providerCheckDuration: gauge(
            "egress_provider_check_duration_seconds",
            "How long the provider's last check took",
            ["provider"],
        ),
        providerLastCheck: gauge(
            "egress_provider_last_check_timestamp_seconds",
            "When the provider's last check finished, in unix seconds",
            ["provider"],
        ),
        providerTargetCheckDuration: gauge(
            "egress_provider_target_check_duration_seconds",
            "How long the last check of the provider target took",
            ["provider", "target"],
        ),
        providerTargetLastCheck: gauge(
            "egress_provider_target_last_check_timestamp_seconds",
            "When the last check of the provider target finished, in unix seconds",
            ["provider", "target"],
        ),
    };
}

export type Metrics = ReturnType<typeof createMetrics>;

/**
 * prom-client's default metrics add `nodejs_active_{handles,requests,resources}_total` gauges, which
 * Prometheus reserves for counters (promtool refuses them). The same totals are the sums of the
 * by-type `nodejs_active_*` gauges it also exports, so the misnamed ones are dropped.
 */
function gaugesWithoutTotal(registry: Registry): void {
    for (const what of ["handles", "requests", "resources"])
        registry.removeSingleMetric(`egress_process_nodejs_active_${what}_total`);
}
