import type { PoolCounts } from "./fleet";

/** One sample: when, and healthy/leased members per pool at that moment. */
export interface TimelinePoint {
    at: string;
    pools: Record<string, { healthy: number; leased: number }>;
}

/** What GET /v1/timeline answers: samples oldest first, and why they may be incomplete. */
export interface TimelineRead {
    points: TimelinePoint[];
    /** Set when the samples could not be read where they live (the store); what is shown is the last read. */
    stale?: string;
}

/**
 * Where the timeline lives: this process' ring (`Timeline`, alone) or the store (store-timeline.ts, with
 * replicas: the leader samples, every replica reads). The start-up and GET /v1/timeline see only this.
 */
export interface TimelineSource {
    readonly intervalMs: number;
    start(): void | Promise<void>;
    stop(): void | Promise<void>;
    /** Never throws: a store that cannot be read is `stale`, not an error. */
    read(): Promise<TimelineRead>;
}

/** One sample's pools from the fleet's counts: healthy and leased only (what the chart draws). */
export function samplePools(counts: Record<string, PoolCounts>): TimelinePoint["pools"] {
    const pools: TimelinePoint["pools"] = {};
    for (const [name, c] of Object.entries(counts)) pools[name] = { healthy: c.healthy, leased: c.leased };
    return pools;
}

/** The sample interval and the span kept, defaulted and checked once for both variants. */
export function timelineCadence(o: { intervalMs?: number; spanMs?: number }): { intervalMs: number; spanMs: number } {
    const intervalMs = o.intervalMs ?? 30_000;
    if (!(Number.isInteger(intervalMs) && intervalMs >= 1))
        throw new RangeError(`timeline interval must be a whole number of ms ≥ 1, got ${intervalMs}`);
    return { intervalMs, spanMs: o.spanMs ?? 3_600_000 };
}

export interface TimelineOptions {
    /** Time between samples. @default 30000 */
    intervalMs?: number;
    /** How far back samples are kept. @default 3600000 (the dashboard's last hour) */
    spanMs?: number;
    counts: () => Record<string, PoolCounts>;
    now?: () => number;
}

/**
 * Healthy and leased counts per pool over the last hour, for the dashboard's timeline. A fixed ring of
 * span/interval samples in memory: a restart starts it empty, which is fine for a picture (the metrics
 * endpoint is the durable record, via Prometheus).
 */
export class Timeline implements TimelineSource {
    private readonly ring: TimelinePoint[];
    private next = 0;
    private size = 0;
    private timer?: NodeJS.Timeout;
    readonly intervalMs: number;

    constructor(private readonly o: TimelineOptions) {
        const { intervalMs, spanMs } = timelineCadence(o);
        this.intervalMs = intervalMs;
        this.ring = new Array(Math.max(1, Math.ceil(spanMs / intervalMs)));
    }

    /** Takes one sample now (also called at start, so the chart has a point at once). */
    sample(): void {
        const pools = samplePools(this.o.counts());
        this.ring[this.next] = { at: new Date((this.o.now ?? Date.now)()).toISOString(), pools };
        this.next = (this.next + 1) % this.ring.length;
        this.size = Math.min(this.size + 1, this.ring.length);
    }

    start(): void {
        this.sample();
        this.timer = setInterval(() => this.sample(), this.intervalMs).unref();
    }

    stop(): void {
        clearInterval(this.timer);
    }

    /** Samples, oldest first. */
    points(): TimelinePoint[] {
        const start = (this.next - this.size + this.ring.length) % this.ring.length;
        return Array.from({ length: this.size }, (_, i) => this.ring[(start + i) % this.ring.length]);
    }

    async read(): Promise<TimelineRead> {
        return { points: this.points() };
    }
}
