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
    /** Drops the series of pools no longer configured (scrape time; a pool scaled to 0 keeps its series). */
    const prunePools = (counter: Counter<string>, pools: Set<string>, other: string, values: readonly string[]) => {
        if (!source) return;
        const live = new Set(source.pools().map((p) => p.name));
        for (const pool of pools) {
            if (live.has(pool)) continue;
            for (const v of values) counter.remove({ pool, [other]: v });
            pools.delete(pool);
        }
    };
    const leasePools = new Set<string>();
    const healPools = new Set<string>();
    const sessionPools = new Set<string>();
    const autoscalePools = new Set<string>();
    const rotationPools = new Set<string>();
    const leases = new Counter({
        name: "egress_leases_total",
        help: 'Lease requests by pool and result (granted, unavailable); pool "*" is any pool',
        labelNames: ["pool", "result"],
        registers: [registry],
        collect() {
            prunePools(this, leasePools, "result", LEASE_RESULTS);
        },
    });
    const sessions = new Counter({
        name: "egress_lease_sessions_total",
        help: "Granted leases that named a sticky session, by pool and result: kept (its proxy again), rebound (moved to another proxy), new (the session's first lease)",
        labelNames: ["pool", "result"],
        registers: [registry],
        collect() {
            prunePools(this, sessionPools, "result", SESSION_RESULTS);
        },
    });
    const heals = new Counter({
        name: "egress_heals_total",
        help: 'Member repairs started by the reconcile loop, by pool and reason (gone, unhealthy); outcomes are egress_operations_total{kind="heal"}',
        labelNames: ["pool", "reason"],
        registers: [registry],
        collect() {
            prunePools(this, healPools, "reason", HEAL_REASONS);
        },
    });
    const autoscales = new Counter({
        name: "egress_autoscale_decisions_total",
        help: 'Scale decisions of the autoscaler, by pool and direction (up, down); their runs are egress_operations_total{kind="autoscale"}',
        labelNames: ["pool", "direction"],
        registers: [registry],
        collect() {
            prunePools(this, autoscalePools, "direction", AUTOSCALE_DIRECTIONS);
        },
    });
    const rotations = new Counter({
        name: "egress_rotations_total",
        help: 'Members queued for rotation, by pool and reason (age, blocked); their runs are egress_operations_total{kind="rotate"}',
        labelNames: ["pool", "reason"],
        registers: [registry],
        collect() {
            prunePools(this, rotationPools, "reason", ROTATION_REASONS);
        },
    });
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
        registry,
        /** Counts a lease request (remembering the pool so its series can be dropped with it). */
        lease(pool: string, result: (typeof LEASE_RESULTS)[number]): void {
            if (pool !== "*") leasePools.add(pool);
            leases.inc({ pool, result });
        },
        /** Counts a granted session lease under the pool of the proxy it got (never a caller-made name). */
        session(pool: string, result: SessionResult): void {
            sessionPools.add(pool);
            sessions.inc({ pool, result });
        },
        heal(pool: string, reason: (typeof HEAL_REASONS)[number]): void {
            healPools.add(pool);
            heals.inc({ pool, reason });
        },
        autoscale(pool: string, direction: (typeof AUTOSCALE_DIRECTIONS)[number]): void {
            autoscalePools.add(pool);
            autoscales.inc({ pool, direction });
        },
        rotation(pool: string, reason: (typeof ROTATION_REASONS)[number]): void {
            rotationPools.add(pool);
            rotations.inc({ pool, reason });
        },
        /** A pool-wide block began (rotate/view.ts): more than half of the pool's members tripped rotateOnBlocks. */
        poolWideBlock(pool: string): void {
            poolWideBlocks.inc({ pool });
        },
        /** A rotation's replacement came back with an IP the pool had within its ipMemorySeconds. */
        reusedIp(pool: string): void {
            reusedIps.inc({ pool });
        },
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
        providerUp: new Gauge({
            name: "egress_provider_up",
            help: "1 when the provider target passed its last check",
            labelNames: ["provider", "target"],
            registers: [registry],
        }),
        providerCheckDuration: new Gauge({
            name: "egress_provider_check_duration_seconds",
            help: "How long the provider's last check took",
            labelNames: ["provider"],
            registers: [registry],
        }),
        /** The rotating gateway's requests, upstream latency and bytes per pool (gateway/metrics.ts). */
        gateway: createGatewayMetrics(registry, livePools, politeness),
        politeness,
        providerLastCheck: new Gauge({
            name: "egress_provider_last_check_timestamp_seconds",
            help: "When the provider's last check finished, in unix seconds",
            labelNames: ["provider"],
            registers: [registry],
        }),
        providerTargetCheckDuration: new Gauge({
            name: "egress_provider_target_check_duration_seconds",
            help: "How long the last check of the provider target took",
            labelNames: ["provider", "target"],
            registers: [registry],
        }),
        providerTargetLastCheck: new Gauge({
            name: "egress_provider_target_last_check_timestamp_seconds",
            help: "When the last check of the provider target finished, in unix seconds",
            labelNames: ["provider", "target"],
            registers: [registry],
        }),
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
