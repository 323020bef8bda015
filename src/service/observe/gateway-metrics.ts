import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { ErrorCode } from "../http/catalogue";
import { createPolitenessMetrics, type PolitenessMetrics } from "./politeness-metrics";

/** Per pool: how gateway requests ended. `unavailable`: answered 503 (nothing leasable), no member used. */
export const GATEWAY_OUTCOMES = ["ok", "blocked", "error", "unavailable"] as const;
export type GatewayOutcome = (typeof GATEWAY_OUTCOMES)[number];
/** Requests refused before a pool was chosen (no pool label: the pool may be made up). */
export const GATEWAY_REFUSALS = [
    "unauthenticated",
    "forbidden",
    "bad_username",
    "unknown_pool",
    "unknown_zone",
    "unknown_label",
    "session_gone",
    "over_limit",
    "bad_request",
    "headers_too_large",
    "request_timeout",
    "forbidden_target",
    "target_busy",
] as const satisfies readonly ErrorCode[];
export type GatewayRefusal = (typeof GATEWAY_REFUSALS)[number];
const DIRECTIONS = ["received", "sent"] as const;
const KINDS = ["http", "connect"] as const;

/**
 * The gateway's metrics, on the service's registry (metrics.ts calls this). Pool-labelled series of a
 * pool that is no longer configured are dropped at scrape time, like the lease counters'.
 */
export function createGatewayMetrics(
    registry: Registry,
    livePools?: () => Set<string>,
    /** The service's politeness counter (metrics.ts shares it with the lease API); its own otherwise. */
    politeness: PolitenessMetrics = createPolitenessMetrics(registry, livePools),
) {
    /** Pools that have series (only pools a lease was asked of, so configured ones: a handful). */
    const pools = new Set<string>();
    const prune = (drop: (pool: string) => void) => {
        if (!livePools) return;
        const live = livePools();
        for (const p of pools) if (!live.has(p)) drop(p);
    };
    const outcomes = requestOutcomes(registry, pools, prune);
    const traffic = upstreamTraffic(registry, prune);
    const refusals = new Counter({
        name: "egress_gateway_refusals_total",
        help: "Gateway requests refused before a member was chosen, by reason",
        labelNames: ["reason"],
        registers: [registry],
    });
    return {
        politeness,
        ...memberWaits(registry, prune),
        ...outcomes,
        ...traffic,
        refused(reason: GatewayRefusal): void {
            refusals.inc({ reason });
        },
    };
}

/** Drops, at scrape time, the series of each pool that has some and is no longer configured. */
type Prune = (drop: (pool: string) => void) => void;

/** How requests and each of their attempts ended, and why requests were sent again; counting one records its pool. */
function requestOutcomes(registry: Registry, pools: Set<string>, prune: Prune) {
    /** Reasons retries were counted under (a handful of RFC 9209 types), for pruning a gone pool's series. */
    const retryReasons = new Set<string>();
    const byOutcome = (name: string, help: string) =>
        new Counter({
            name,
            help,
            labelNames: ["pool", "kind", "outcome"],
            registers: [registry],
            collect() {
                prune((pool) => {
                    for (const kind of KINDS)
                        for (const outcome of GATEWAY_OUTCOMES) this.remove({ pool, kind, outcome });
                });
            },
        });
    const requests = byOutcome(
        "egress_gateway_requests_total",
        "Gateway requests by pool, kind (http, connect) and outcome (ok, blocked, error; unavailable: 503, no member free)",
    );
    const attempts = byOutcome(
        "egress_gateway_attempts_total",
        "Gateway attempts (one member each; a retried request has several) by pool, kind and the attempt's release outcome",
    );
    const retries = new Counter({
        name: "egress_gateway_retries_total",
        help: "Gateway requests sent again to another member, by pool and why the member before failed (an RFC 9209 error type, or member_error: its own proxy error answer)",
        labelNames: ["pool", "reason"],
        registers: [registry],
        collect() {
            prune((pool) => {
                for (const reason of retryReasons) this.remove({ pool, reason });
            });
        },
    });
    return {
        request(pool: string, kind: (typeof KINDS)[number], outcome: GatewayOutcome): void {
            pools.add(pool);
            requests.inc({ pool, kind, outcome });
        },
        attempt(pool: string, kind: (typeof KINDS)[number], outcome: GatewayOutcome): void {
            pools.add(pool);
            attempts.inc({ pool, kind, outcome });
        },
        retried(pool: string, reason: string): void {
            pools.add(pool);
            retryReasons.add(reason);
            retries.inc({ pool, reason });
        },
    };
}

/** What went through the members: how long each took to answer, and the bytes both ways. */
function upstreamTraffic(registry: Registry, prune: Prune) {
    const latency = new Histogram({
        name: "egress_gateway_upstream_latency_seconds",
        help: "From choosing a member to its response head (http) or tunnel answer (connect), by pool",
        labelNames: ["pool"],
        buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
        registers: [registry],
        collect() {
            prune((pool) => this.remove({ pool }));
        },
    });
    const bytes = new Counter({
        name: "egress_gateway_bytes_total",
        help: "Bytes between clients and the gateway by pool and direction (received from the client, sent to it), request and response heads included",
        labelNames: ["pool", "direction"],
        registers: [registry],
        collect() {
            prune((pool) => {
                for (const direction of DIRECTIONS) this.remove({ pool, direction });
            });
        },
    });
    return {
        upstreamLatency(pool: string, seconds: number): void {
            latency.observe({ pool }, seconds);
        },
        bytes(pool: string, received: number, sent: number): void {
            if (received > 0) bytes.inc({ pool, direction: "received" }, received);
            if (sent > 0) bytes.inc({ pool, direction: "sent" }, sent);
        },
    };
}

/** Requests waiting for a busy pool's member (--gateway-wait-ms): how many now, and how long the served ones waited. */
function memberWaits(registry: Registry, prune: Prune) {
    const waiting = new Gauge({
        name: "egress_gateway_waiting_requests",
        help: "Gateway requests waiting now for a busy pool's member (--gateway-wait-ms)",
        registers: [registry],
    });
    const waits = new Histogram({
        name: "egress_gateway_wait_seconds",
        help: "How long gateway requests that waited for a member waited before they got one, by pool (* = any pool)",
        labelNames: ["pool"],
        buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
        registers: [registry],
        collect() {
            prune((pool) => this.remove({ pool }));
        },
    });
    return {
        waited(pool: string, seconds: number): void {
            waits.observe({ pool }, seconds);
        },
        waitingNow(n: number): void {
            waiting.set(n);
        },
    };
}

export type GatewayMetrics = ReturnType<typeof createGatewayMetrics>;
