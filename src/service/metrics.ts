import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { PoolCounts } from "./fleet";

/**
 * Every metric the service exports at /metrics, on one registry (one per app: tests run several).
 * `proxyCounts` feeds the egress_proxies gauge at scrape time, so it is never stale.
 */
export function createMetrics(proxyCounts?: () => Record<string, PoolCounts>) {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry, prefix: "egress_process_" });
    const ms = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100];
    return {
        registry,
        leases: new Counter({ name: "egress_leases_total", help: "Lease requests by pool and result (granted, unavailable)", labelNames: ["pool", "result"], registers: [registry] }),
        releases: new Counter({ name: "egress_lease_releases_total", help: "Lease releases by outcome", labelNames: ["outcome"], registers: [registry] }),
        leaseLatency: new Histogram({ name: "egress_lease_latency_ms", help: "Time to select a proxy for a lease, in milliseconds", buckets: ms, registers: [registry] }),
        proxies: new Gauge({
            name: "egress_proxies",
            help: "Proxies by pool and state (healthy, unhealthy, unknown, leased)",
            labelNames: ["pool", "state"],
            registers: [registry],
            collect() {
                if (!proxyCounts) return;
                this.reset(); // pools that disappeared drop out
                for (const [pool, c] of Object.entries(proxyCounts()))
                    for (const state of ["healthy", "unhealthy", "unknown", "leased"] as const) this.set({ pool, state }, c[state]);
            },
        }),
        probes: new Counter({ name: "egress_probes_total", help: "Health probes through proxies by result", labelNames: ["result"], registers: [registry] }),
        probeLatency: new Histogram({ name: "egress_probe_latency_ms", help: "Health probe round trip through the proxy, in milliseconds", buckets: [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000], registers: [registry] }),
        operations: new Counter({ name: "egress_operations_total", help: "Engine operations by kind and result", labelNames: ["kind", "result"], registers: [registry] }),
        operationDuration: new Histogram({ name: "egress_operation_duration_seconds", help: "Engine operation duration", labelNames: ["kind"], buckets: [1, 2, 5, 10, 30, 60, 120, 300, 600, 1800], registers: [registry] }),
        heals: new Counter({ name: "egress_heals_total", help: "Member repairs started by the reconcile loop, by pool and reason (gone, unhealthy); outcomes are egress_operations_total{kind=\"heal\"}", labelNames: ["pool", "reason"], registers: [registry] }),
        providerUp: new Gauge({ name: "egress_provider_up", help: "1 when the provider target passed its last check", labelNames: ["provider", "target"], registers: [registry] }),
    };
}

export type Metrics = ReturnType<typeof createMetrics>;
