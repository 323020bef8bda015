import type { Logger } from "pino";
import type { Checker, CheckVerdict } from "../providers-health";
import type { Metrics } from "./metrics";

/** A verdict plus when it last changed, as served at GET /v1/providers/health. */
export interface TargetReport extends CheckVerdict {
    checkedAt: string;
    /** When `ok` last flipped (or the first check). */
    since: string;
}

export interface ProviderHealthReport {
    provider: string;
    kind: string;
    ok: boolean;
    targets: TargetReport[];
}

/**
 * Runs every provider Checker on an interval and keeps the latest verdicts with transition times.
 * A checker that throws (it should not) is reported as a failed `checker` stage, never crashes the loop.
 * With `intervalMs: 0` (`egress serve --provider-check-interval 0`) nothing is checked and the snapshot is
 * empty: no provider is reported down, so self-healing judges members by their health probes alone.
 */
export class ProviderHealth {
    private readonly reports = new Map<string, ProviderHealthReport>();
    private timer?: NodeJS.Timeout;
    private round?: Promise<void>;
    private stopped = false;
    private checkers: Checker[] = [];

    constructor(private readonly deps: { log: Logger; metrics: Metrics; intervalMs: number; timeoutMs: number }) {}

    get enabled(): boolean {
        return this.deps.intervalMs > 0;
    }

    setCheckers(checkers: Checker[]): void {
        this.checkers = checkers;
        for (const [key, report] of this.reports) {
            if (checkers.some((c) => c.provider === key)) continue;
            this.reports.delete(key);
            this.forgetSeries(key, report.targets.map((t) => t.target));
        }
    }

    start(): void {
        if (!this.enabled) return;
        this.stopped = false;
        const tick = () => {
            this.round = this.runOnce().finally(() => {
                if (!this.stopped) this.timer = setTimeout(tick, this.deps.intervalMs).unref();
            });
        };
        tick();
    }

    /** Stops the loop; waits for a round in flight so nothing runs after shutdown. */
    async stop(): Promise<void> {
        this.stopped = true;
        clearTimeout(this.timer);
        await this.round;
    }

    snapshot(): ProviderHealthReport[] {
        if (!this.enabled) return [];
        return this.checkers.map((c) => this.reports.get(c.provider) ?? { provider: c.provider, kind: c.kind, ok: false, targets: [] });
    }

    async runOnce(): Promise<void> {
        await Promise.all(this.checkers.map(async (c) => {
            const at = new Date().toISOString();
            const t0 = process.hrtime.bigint();
            let verdicts: CheckVerdict[];
            try {
                verdicts = await c.check(AbortSignal.timeout(this.deps.timeoutMs));
            } catch (e) {
                verdicts = [{ target: c.provider, ok: false, stage: "checker", message: (e as Error).message }];
            }
            if (!this.checkers.includes(c)) return; // removed while it ran: leave no series or report behind
            const { metrics } = this.deps;
            metrics.providerCheckDuration.set({ provider: c.provider }, Number(process.hrtime.bigint() - t0) / 1e9);
            metrics.providerLastCheck.set({ provider: c.provider }, Date.now() / 1000);
            const previous = this.reports.get(c.provider);
            // Targets the checker no longer reports (a zone or context removed) lose their series.
            const gone = (previous?.targets ?? []).map((t) => t.target).filter((t) => !verdicts.some((v) => v.target === t));
            for (const target of gone) metrics.providerUp.remove({ provider: c.provider, target });
            const targets = verdicts.map((v) => {
                const before = previous?.targets.find((t) => t.target === v.target);
                const changed = !before || before.ok !== v.ok;
                if (changed && before) this.deps.log[v.ok ? "info" : "warn"]({ provider: c.provider, target: v.target, ok: v.ok, stage: v.stage, reason: v.message }, "provider health changed");
                metrics.providerUp.set({ provider: c.provider, target: v.target }, v.ok ? 1 : 0);
                return { ...v, checkedAt: at, since: changed ? at : before!.since };
            });
            this.reports.set(c.provider, { provider: c.provider, kind: c.kind, ok: targets.length > 0 && targets.every((t) => t.ok), targets });
        }));
    }

    private forgetSeries(provider: string, targets: string[]): void {
        for (const target of targets) this.deps.metrics.providerUp.remove({ provider, target });
        this.deps.metrics.providerCheckDuration.remove({ provider });
        this.deps.metrics.providerLastCheck.remove({ provider });
    }
}
