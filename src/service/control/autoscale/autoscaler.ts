import type { Logger } from "pino";
import type { AutoscaleConfig, PoolConfig } from "../../../model";
import type { AutoscaleRecord, Operation } from "../../../state/operations/operation";
import { Loop } from "../../../state/redis/loop";
import { NotAcceptingError, type Scaler } from "../scaler";
import { type AutoscaleDecision, type AutoscaleSignals, type AutoscaleState, decide } from "./decide";

export interface AutoscalerDeps {
    /** Time between samples (and decisions); 0 = the loop is off. */
    intervalMs: number;
    /** How far back signals are averaged. */
    windowMs: number;
    log: Logger;
    scaler: Scaler;
    /** The stack file's pools (re-read every round: bounds changed there apply at the next one). */
    pools: () => PoolConfig[];
    /** Healthy, leased and not-yet-probed members per pool now (fleet.poolCounts). */
    counts: () => Record<string, { healthy: number; leased: number; unknown: number; actual?: number }>;
    /** Counts every scale decision (egress_autoscale_decisions_total). */
    onDecision?: (pool: string, direction: "up" | "down") => void;
    now?: () => number;
}

interface Sample {
    at: number;
    leased: number;
    healthy: number;
    refusedLeases: number;
    refusedGateway: number;
}

/** What GET /v1/pools shows of an autoscaled pool besides its bounds. */
export interface AutoscaleView {
    signals?: AutoscaleSignals & { demand: number; wanted: number; holding?: string };
    lastDecision?: AutoscaleRecord & { operation: string };
}

/**
 * The autoscale loop of `egress serve`: every interval it samples each autoscaled pool (leased and
 * healthy members, requests refused since the last sample), averages the window, asks decide.ts and
 * turns a `scale` answer into an `autoscale` operation on the scaler, the same queue person's scale
 * requests and repairs use; a scale-down there drains first. It decides only while the scaler accepts
 * requests (recovery done, and with replicas, this one leads) and no operation runs or waits: the fleet
 * follows an operation only once it settles.
 */
export class Autoscaler {
    private readonly samples = new Map<string, Sample[]>();
    /** Refusals since the last sample, per pool. */
    private readonly refused = new Map<string, { lease: number; gateway: number }>();
    private readonly state = new Map<string, AutoscaleState>();
    /** Pools whose last autoscale operation failed: sized from their members until one succeeds. */
    private readonly failed = new Set<string>();
    private readonly views = new Map<string, AutoscaleView>();
    /** The autoscaled pools as the last round read them: a refusal is checked against these, not the file. */
    private configs = new Map<string, PoolConfig & { autoscale: AutoscaleConfig }>();
    /** Absent when the interval is 0 (the loop is off). */
    private readonly loop?: Loop;
    private readonly now: () => number;

    constructor(private readonly deps: AutoscalerDeps) {
        for (const [k, v] of [
            ["interval", deps.intervalMs],
            ["window", deps.windowMs],
        ] as const)
            if (!Number.isFinite(v) || v < 0)
                throw new RangeError(`autoscale ${k} must be 0 (off) or a positive number of milliseconds, got ${v}`);
        this.now = deps.now ?? Date.now;
        if (deps.intervalMs)
            this.loop = new Loop({
                name: "autoscale",
                everyMs: deps.intervalMs,
                round: () => this.runOnce(),
                log: deps.log,
                quiet: (e) => e instanceof NotAcceptingError,
            });
    }

    start(): void {
        this.loop?.start();
    }

    /** Stops the loop. A round is synchronous, so none is ever in flight to wait for: resolves at once. */
    async stop(): Promise<void> {
        await this.loop?.stop();
    }

    /**
     * A request found no member of `pool` (fleet.onRefused). Counted for the next sample; an empty
     * autoscaled pool is woken at once rather than at the next round.
     */
    refusal(pool: string, via: "lease" | "gateway"): void {
        const cfg = this.configs.get(pool);
        if (!cfg) return;
        const r = this.refused.get(pool) ?? { lease: 0, gateway: 0 };
        r[via]++;
        this.refused.set(pool, r);
        if (this.current(cfg) === 0 && this.deps.scaler.accepts()) this.decideFor(cfg, this.now());
    }

    /**
     * An operation settled: for each pool it autoscaled, the cooldown starts over now and the window is
     * emptied, so the next decision sees the pool at its new size, not the refusals that asked for it.
     */
    settled(op: Operation): void {
        const now = this.now();
        for (const pool of Object.keys(op.autoscale ?? {})) {
            // A failed one left the stack file at the count it asked for while fewer members exist: the
            // pool is then sized from its members, so the next decision (after the cooldown) asks again.
            if (op.status === "failed") this.failed.add(pool);
            else this.failed.delete(pool);
            this.samples.delete(pool);
            const st = this.state.get(pool);
            if (st?.lastDecisionAt !== undefined) this.state.set(pool, { ...st, lastDecisionAt: now });
        }
    }

    view(pool: string): AutoscaleView | undefined {
        return this.views.get(pool);
    }

    /** One round: sample every autoscaled pool, then decide for each. Exposed for tests. */
    runOnce(): void {
        const now = this.now();
        const pools = this.deps.pools().filter((p): p is PoolConfig & { autoscale: AutoscaleConfig } => !!p.autoscale);
        this.configs = new Map(pools.map((p) => [p.name, p]));
        for (const name of [...this.samples.keys()])
            if (!this.configs.has(name)) [this.samples, this.state, this.views].forEach((m) => m.delete(name));
        const counts = this.deps.counts();
        for (const p of pools) {
            const r = this.refused.get(p.name) ?? { lease: 0, gateway: 0 };
            this.refused.delete(p.name);
            const list = this.samples.get(p.name) ?? [];
            list.push({
                at: now,
                leased: counts[p.name]?.leased ?? 0,
                healthy: counts[p.name]?.healthy ?? 0,
                refusedLeases: r.lease,
                refusedGateway: r.gateway,
            });
            // Keep what falls inside the window, and always the newest sample.
            while (list.length > 1 && list[0].at <= now - this.deps.windowMs) list.shift();
            this.samples.set(p.name, list);
        }
        if (!this.deps.scaler.accepts() || this.deps.scaler.busy()) return;
        for (const p of pools) {
            // Members not probed yet refuse leases they will soon take: their pool waits for them.
            if ((counts[p.name]?.unknown ?? 0) > 0 && this.current(p) > 0) {
                this.hold(p.name, "members are still provisioning or not probed yet");
                continue;
            }
            this.decideFor(p, now, counts[p.name]?.leased ?? 0);
        }
    }

    /** The count the pool heads to: a request the scaler holds, else the stack file's (its members after a failed decision). */
    private current(p: PoolConfig): number {
        const asked = this.deps.scaler.desired(p.name);
        if (asked !== undefined) return asked;
        if (this.failed.has(p.name)) return this.deps.counts()[p.name]?.actual ?? 0;
        return p.replicas;
    }

    private signals(pool: string): AutoscaleSignals {
        // The refusals since the last sample count too: a wake-up decides on them before any round.
        const pending = this.refused.get(pool);
        const list = this.samples.get(pool) ?? [];
        const n = Math.max(1, list.length);
        const sum = (f: (s: Sample) => number) => list.reduce((a, s) => a + f(s), 0);
        const util = (s: Sample) =>
            s.healthy > 0 ? s.leased / s.healthy : s.leased + s.refusedLeases + s.refusedGateway > 0 ? 1 : 0;
        return {
            leased: sum((s) => s.leased) / n,
            healthy: sum((s) => s.healthy) / n,
            utilization: Math.round((sum(util) / n) * 1000) / 1000,
            refusedLeases: sum((s) => s.refusedLeases) + (pending?.lease ?? 0),
            refusedGateway: sum((s) => s.refusedGateway) + (pending?.gateway ?? 0),
            samples: n,
        };
    }

    private decideFor(p: PoolConfig & { autoscale: AutoscaleConfig }, now: number, leasedNow?: number): void {
        const signals = this.signals(p.name);
        const d = decide({
            now,
            current: this.current(p),
            leasedNow,
            config: p.autoscale,
            signals,
            windowMs: this.deps.windowMs,
            state: this.state.get(p.name) ?? {},
        });
        const view = this.views.get(p.name) ?? {};
        view.signals = {
            ...signals,
            demand: d.demand,
            wanted: d.wanted,
            ...(d.action === "hold" ? { holding: d.reasons[d.reasons.length - 1] } : {}),
        };
        this.views.set(p.name, view);
        if (d.action === "hold") return void this.state.set(p.name, d.state);
        this.act(p.name, d, signals, now, view);
    }

    private hold(pool: string, why: string): void {
        const view = this.views.get(pool) ?? {};
        view.signals = {
            ...this.signals(pool),
            demand: view.signals?.demand ?? 0,
            wanted: view.signals?.wanted ?? 0,
            holding: why,
        };
        this.views.set(pool, view);
    }

    private act(pool: string, d: AutoscaleDecision, signals: AutoscaleSignals, now: number, view: AutoscaleView) {
        const record: AutoscaleRecord = {
            at: new Date(now).toISOString(),
            from: d.from,
            to: d.to,
            demand: d.demand,
            wanted: d.wanted,
            reasons: d.reasons,
            signals,
        };
        try {
            const op = this.deps.scaler.autoscale(pool, d.to, record);
            this.state.set(pool, d.state);
            view.lastDecision = { ...record, operation: op.id };
            this.deps.onDecision?.(pool, d.to > d.from ? "up" : "down");
            this.deps.log.info(
                { pool, from: d.from, to: d.to, operation: op.id, reasons: d.reasons },
                `autoscaling pool ${pool} from ${d.from} to ${d.to}`,
            );
        } catch (e) {
            if (!(e instanceof NotAcceptingError)) throw e; // stopped leading or stopping: the next leader decides
        }
    }
}
