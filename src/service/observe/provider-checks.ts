import type { Logger } from "pino";
import type { Checker, CheckVerdict } from "../../../components/kind";
import { Loop } from "../../state/redis/loop";
import type { Metrics } from "./metrics";

/** A verdict plus when it last changed, as served at GET /v1/providers/health. */
export interface TargetReport extends CheckVerdict {
    checkedAt: string;
    /** When `ok` last flipped (or the first check). A change of stage or reason is logged but keeps `since`. */
    since: string;
}

export interface ProviderHealthReport {
    provider: string;
    kind: string;
    ok: boolean;
    targets: TargetReport[];
}

/** How long past the timeout a checker that ignores its signal is waited for. */
const OVERRUN_GRACE_MS = 1000;

/**
 * Runs every provider Checker on an interval and keeps the latest verdicts with transition times.
 * A checker that throws (it should not) is reported as a failed `checker` stage, never crashes the loop.
 * With `intervalMs: 0` (`egress serve --provider-check-interval 0`) nothing is checked and the snapshot is
 * empty: no provider is reported down, so self-healing judges members by their health probes alone.
 */
export class ProviderHealth {
    private readonly reports = new Map<string, ProviderHealthReport>();
    /** Absent when the interval is 0 (nothing is checked). */
    private readonly loop?: Loop;
    private checkers: Checker[] = [];

    constructor(private readonly deps: { log: Logger; metrics: Metrics; intervalMs: number; timeoutMs: number }) {
        // The first round at once: the reconciler holds repairs of a provider not checked yet.
        if (deps.intervalMs > 0)
            this.loop = new Loop({
                name: "provider check",
                everyMs: deps.intervalMs,
                firstAfterMs: 0,
                round: () => this.runOnce(),
                log: deps.log,
            });
    }

    get enabled(): boolean {
        return this.deps.intervalMs > 0;
    }

    setCheckers(checkers: Checker[]): void {
        this.checkers = checkers;
        for (const [key, report] of this.reports) {
            if (checkers.some((c) => c.provider === key)) continue;
            this.reports.delete(key);
            this.forgetSeries(
                key,
                report.targets.map((t) => t.target),
            );
        }
    }

    start(): void {
        this.loop?.start();
    }

    /** Stops the loop; waits for a round in flight so nothing runs after shutdown. */
    async stop(): Promise<void> {
        await this.loop?.stop();
    }

    snapshot(): ProviderHealthReport[] {
        if (!this.enabled) return [];
        return this.checkers.map(
            (c) => this.reports.get(c.provider) ?? { provider: c.provider, kind: c.kind, ok: false, targets: [] },
        );
    }

    /** The per-check timeout (`--provider-check-timeout`): checkers get it as their per-target timeout too. */
    get timeoutMs(): number {
        return this.deps.timeoutMs;
    }

    async runOnce(): Promise<void> {
        await Promise.all(this.checkers.map((c) => this.checkOne(c)));
    }

    /**
     * One checker, bounded by the timeout: its signal aborts then, and a checker that ignores the signal is
     * not waited for past a short grace (its missing targets get `timeout` verdicts). Verdicts a checker
     * hands over early are published at once, so a silent target holds back no other target's verdict.
     */
    private async checkOne(c: Checker): Promise<void> {
        const at = new Date().toISOString();
        const t0 = process.hrtime.bigint();
        const { timeoutMs } = this.deps;
        const reason = new Error(
            `no verdict within the ${timeoutMs} ms provider check timeout (--provider-check-timeout)`,
        );
        const timeout = new AbortController();
        const early = new Map<string, CheckVerdict>();
        const timers: NodeJS.Timeout[] = [];
        // Unref'd: a check in flight never keeps the process alive on its own.
        timers.push(setTimeout(() => timeout.abort(reason), timeoutMs).unref());
        const overrun = new Promise<CheckVerdict[]>((resolve) => {
            timers.push(
                setTimeout(() => {
                    const known = this.reports.get(c.provider)?.targets.map((t) => t.target) ?? [];
                    const missing = (known.length ? known : [c.provider]).filter((t) => !early.has(t));
                    resolve([
                        ...early.values(),
                        ...missing.map((target) => ({
                            target,
                            ok: false,
                            stage: "timeout",
                            message: `${reason.message}; the checker did not stop when told to`,
                        })),
                    ]);
                }, timeoutMs + OVERRUN_GRACE_MS).unref(),
            );
        });
        let verdicts: CheckVerdict[];
        try {
            const onVerdict = (v: CheckVerdict) => {
                early.set(v.target, v);
                if (this.checkers.includes(c))
                    this.publish(c, [v], at, true, Number(process.hrtime.bigint() - t0) / 1e9);
            };
            verdicts = await Promise.race([c.check(timeout.signal, onVerdict), overrun]);
        } catch (e) {
            verdicts = [{ target: c.provider, ok: false, stage: "checker", message: (e as Error).message }];
        } finally {
            timers.forEach(clearTimeout);
        }
        if (!this.checkers.includes(c)) return; // removed while it ran: leave no series or report behind
        const { metrics } = this.deps;
        const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
        metrics.providerCheckDuration.set({ provider: c.provider }, seconds);
        metrics.providerLastCheck.set({ provider: c.provider }, Date.now() / 1000);
        this.publish(c, verdicts, at, false, seconds);
    }

    /**
     * Records verdicts; `partial`: only these targets changed (the others keep their last report). A
     * verdict without its own `durationMs` gets `seconds`, its provider's check time so far.
     */
    private publish(c: Checker, verdicts: CheckVerdict[], at: string, partial: boolean, seconds: number): void {
        const { metrics } = this.deps;
        const finished = Date.now() / 1000;
        const previous = this.reports.get(c.provider);
        // Targets the checker no longer reports (a zone or context removed) lose their series.
        const gone = partial
            ? []
            : (previous?.targets ?? []).map((t) => t.target).filter((t) => !verdicts.some((v) => v.target === t));
        for (const target of gone) this.forgetTarget(c.provider, target);
        const fresh = verdicts.map(({ durationMs, ...v }) => {
            const before = previous?.targets.find((t) => t.target === v.target);
            this.logChange(c.provider, before, v);
            const labels = { provider: c.provider, target: v.target };
            metrics.providerUp.set(labels, v.ok ? 1 : 0);
            metrics.providerTargetCheckDuration.set(labels, durationMs === undefined ? seconds : durationMs / 1000);
            metrics.providerTargetLastCheck.set(labels, finished);
            return { ...v, checkedAt: at, since: !before || before.ok !== v.ok ? at : before.since };
        });
        const kept = partial
            ? (previous?.targets ?? []).filter((t) => !verdicts.some((v) => v.target === t.target))
            : [];
        const targets = [...kept, ...fresh];
        this.reports.set(c.provider, {
            provider: c.provider,
            kind: c.kind,
            ok: targets.length > 0 && targets.every((t) => t.ok),
            targets,
        });
    }

    /**
     * One line when a target's verdict changes: `ok` flips, the failing stage or the reason changes, and
     * for its first verdict (warn when it is already down, so a target down since the start is never
     * silent). Numbers are left out of the comparison: "gave up after 3 tries in 4.2 s" or a free-bytes
     * count differ every round without saying anything new. An ok verdict's message is a description,
     * not a reason, so only its `ok` counts.
     */
    private logChange(provider: string, before: CheckVerdict | undefined, v: CheckVerdict): void {
        const now = { ok: v.ok, stage: v.stage, reason: v.message };
        if (!before) {
            this.deps.log[v.ok ? "info" : "warn"](
                { provider, target: v.target, ...now },
                v.ok ? "provider target passed its first check" : "provider target is down at its first check",
            );
            return;
        }
        const reasonOf = (x: CheckVerdict) => (x.ok ? "" : x.message.replace(/\d+(\.\d+)?/g, "#"));
        if (before.ok === v.ok && before.stage === v.stage && reasonOf(before) === reasonOf(v)) return;
        const was = { ok: before.ok, stage: before.stage, reason: before.message };
        this.deps.log[v.ok ? "info" : "warn"]({ provider, target: v.target, ...now, was }, "provider health changed");
    }

    private forgetTarget(provider: string, target: string): void {
        for (const g of [
            this.deps.metrics.providerUp,
            this.deps.metrics.providerTargetCheckDuration,
            this.deps.metrics.providerTargetLastCheck,
        ])
            g.remove({ provider, target });
    }

    private forgetSeries(provider: string, targets: string[]): void {
        for (const target of targets) this.forgetTarget(provider, target);
        this.deps.metrics.providerCheckDuration.remove({ provider });
        this.deps.metrics.providerLastCheck.remove({ provider });
    }
}
