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
 */
export class ProviderHealth {
    private readonly reports = new Map<string, ProviderHealthReport>();
    private timer?: NodeJS.Timeout;
    private round?: Promise<void>;
    private stopped = false;
    private checkers: Checker[] = [];

    constructor(private readonly deps: { log: Logger; metrics: Metrics; intervalMs: number }) {}

    setCheckers(checkers: Checker[]): void {
        this.checkers = checkers;
        for (const key of this.reports.keys()) if (!checkers.some((c) => c.provider === key)) this.reports.delete(key);
    }

    start(): void {
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
        return this.checkers.map((c) => this.reports.get(c.provider) ?? { provider: c.provider, kind: c.kind, ok: false, targets: [] });
    }

    async runOnce(): Promise<void> {
        await Promise.all(this.checkers.map(async (c) => {
            const at = new Date().toISOString();
            let verdicts: CheckVerdict[];
            try {
                verdicts = await c.check(AbortSignal.timeout(30_000));
            } catch (e) {
                verdicts = [{ target: c.provider, ok: false, stage: "checker", message: (e as Error).message }];
            }
            const previous = this.reports.get(c.provider);
            const targets = verdicts.map((v) => {
                const before = previous?.targets.find((t) => t.target === v.target);
                const changed = !before || before.ok !== v.ok;
                if (changed && before) this.deps.log[v.ok ? "info" : "warn"]({ provider: c.provider, target: v.target, ok: v.ok, stage: v.stage, reason: v.message }, "provider health changed");
                this.deps.metrics.providerUp.set({ provider: c.provider, target: v.target }, v.ok ? 1 : 0);
                return { ...v, checkedAt: at, since: changed ? at : before!.since };
            });
            this.reports.set(c.provider, { provider: c.provider, kind: c.kind, ok: targets.length > 0 && targets.every((t) => t.ok), targets });
        }));
    }
}
