import type { PoolCounts } from "./fleet";

/** One sample: when, and healthy/leased members per pool at that moment. */
export interface TimelinePoint {
    at: string;
    pools: Record<string, { healthy: number; leased: number }>;
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
export class Timeline {
    private readonly ring: TimelinePoint[];
    private next = 0;
    private size = 0;
    private timer?: NodeJS.Timeout;
    readonly intervalMs: number;

    constructor(private readonly o: TimelineOptions) {
        this.intervalMs = o.intervalMs ?? 30_000;
        const span = o.spanMs ?? 3_600_000;
        if (!(Number.isInteger(this.intervalMs) && this.intervalMs >= 1))
            throw new RangeError(`timeline interval must be a whole number of ms ≥ 1, got ${this.intervalMs}`);
        this.ring = new Array(Math.max(1, Math.ceil(span / this.intervalMs)));
    }

    /** Takes one sample now (also called at start, so the chart has a point at once). */
    sample(): void {
        const pools: TimelinePoint["pools"] = {};
        for (const [name, c] of Object.entries(this.o.counts())) pools[name] = { healthy: c.healthy, leased: c.leased };
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
}
