import type { Logger } from "pino";
import type { PoolConfig, ProxyMember } from "../../../model";
import type { GoneCheck } from "../../../../components/kind";
import type { MemberHealthView } from "../../../probes";
import type { Operation } from "../../../state/operations/operation";
import type { ProviderHealthReport } from "../../observe/provider-checks";
import { Loop } from "../../../state/redis/loop";
import { NotAcceptingError, type Scaler } from "../scaler";
import { afterRepair, Decision, decideRepairs, HEAL_BACKOFF, HealReason, MemberFacts } from "./decide";
import { HealHistory, type HealHistoryStore } from "./history";
import { ConvergenceRetry, type ConvergenceRetryStatus } from "./convergence";
import { setsCounts } from "../run-operation";

export interface ReconcilerDeps {
    /** Time between the ends of two rounds; 0 = the loop is off. */
    intervalMs: number;
    log: Logger;
    scaler: Scaler;
    /** Members of the fleet (from state). */
    members: () => ProxyMember[];
    health: (id: string) => MemberHealthView | undefined;
    pools: () => PoolConfig[];
    providers: () => ProviderHealthReport[];
    /** Provider entry name → its kind's liveness hook (components/<kind>/gone.ts); entries without one are absent. */
    goneChecks: () => ReadonlyMap<string, GoneCheck>;
    /** Counts every repair started, by pool and reason (egress_heals_total). */
    onRepair?: (pool: string, reason: HealReason) => void;
    /**
     * With replicas: where the back-off outlives this leader (store-history.ts); absent, it lives in
     * this process only.
     */
    historyStore?: HealHistoryStore;
    /** @default HEAL_BACKOFF (1 min doubling to 30 min) */
    backoff?: { baseMs: number; maxMs: number };
    now?: () => number;
}

/** What GET /v1/heal shows: the loop's settings, its last round, and who waits for what. */
export interface ReconcileStatus {
    enabled: boolean;
    intervalSeconds: number;
    lastRound?: { at: string; durationMs: number; members: number; skipped?: string; decisions: Decision[] };
    /** Providers whose members are not repaired now, and why: the "operation-less" report. */
    providersDown: { provider: string; reason: string }[];
    backoff: { member: string; failures: number; retryAt: string }[];
    /** Set while the stack's convergence waits to be tried again after a transient failure (convergence.ts). */
    convergence?: ConvergenceRetryStatus;
}

/**
 * The reconcile loop of `egress serve`: every round it asks each kind's liveness hook which members are
 * gone, reads the health engine's verdicts, decides (decide.ts) and queues one `heal` operation on the
 * scaler for the repairs, so repairs share the one-engine-operation-at-a-time queue with scaling. A
 * round does no engine run of its own, and none at all when nothing needs repair.
 */
export class Reconciler {
    private readonly history: HealHistory;
    private readonly convergence: ConvergenceRetry;
    /** Absent when the interval is 0 (the loop is off). */
    private readonly loop?: Loop;
    private last?: ReconcileStatus["lastRound"];
    private down: ReconcileStatus["providersDown"] = [];
    private readonly now: () => number;

    constructor(private readonly deps: ReconcilerDeps) {
        if (!Number.isFinite(deps.intervalMs) || deps.intervalMs < 0)
            throw new RangeError(
                `reconcile interval must be 0 (off) or a positive number of milliseconds, got ${deps.intervalMs}`,
            );
        this.now = deps.now ?? Date.now;
        this.history = new HealHistory(deps.log, deps.historyStore);
        this.convergence = new ConvergenceRetry(deps.backoff ?? HEAL_BACKOFF, this.now);
        if (deps.intervalMs)
            this.loop = new Loop({
                name: "reconcile",
                everyMs: deps.intervalMs,
                round: () => this.runOnce(),
                log: deps.log,
                quiet: (e) => e instanceof NotAcceptingError,
            });
    }

    start(): void {
        this.loop?.start();
    }

    /** Stops the loop; waits for a round in flight. */
    async stop(): Promise<void> {
        await this.loop?.stop();
    }

    /**
     * This replica stopped leading (start/leading.ts): whoever leads next may change the back-off, so it
     * is read from the store again before this replica's next round as leader.
     */
    follow(): void {
        this.history.release();
        this.convergence.forget();
    }

    /**
     * A heal operation settled: success clears the members' backoff, failure extends it. A count-setting
     * one (scale, autoscale, up) that failed transiently is tried again after the back-off (convergence.ts).
     */
    settled(op: Operation): void {
        if (setsCounts(op)) {
            const retryAt = this.convergence.settled(op);
            if (retryAt !== undefined)
                this.deps.log.warn(
                    { operation: op.id, kind: op.kind, retryAt: new Date(retryAt).toISOString() },
                    "the stack did not converge (a transient failure); the reconcile loop runs `up` again then",
                );
            return;
        }
        if (op.kind !== "heal" || (op.status !== "succeeded" && op.status !== "failed")) return;
        const at = this.now();
        for (const id of op.members ?? []) {
            const h = afterRepair(
                this.history.get(id),
                op.status === "succeeded",
                at,
                this.deps.backoff ?? HEAL_BACKOFF,
            );
            this.history.set(id, h);
            if (h.retryAt)
                this.deps.log.warn(
                    { member: id, operation: op.id, failures: h.failures, retryAt: new Date(h.retryAt).toISOString() },
                    `repair of ${id} failed; backing off`,
                );
        }
    }

    status(): ReconcileStatus {
        return {
            enabled: this.deps.intervalMs > 0,
            intervalSeconds: this.deps.intervalMs / 1000,
            lastRound: this.last,
            providersDown: this.down,
            backoff: [...this.history.entries]
                .filter(([, h]) => h.retryAt !== undefined && h.retryAt > this.now())
                .map(([member, h]) => ({ member, failures: h.failures, retryAt: new Date(h.retryAt!).toISOString() })),
            ...(this.convergence.status() ? { convergence: this.convergence.status() } : {}),
        };
    }

    /** One round; returns its decisions (empty when skipped). Exposed for tests and the bench. */
    async runOnce(): Promise<Decision[]> {
        const started = this.now();
        const t0 = performance.now();
        const members = this.deps.members().filter((m) => m.host); // no address yet: still provisioning
        const finish = (decisions: Decision[], skipped?: string) => {
            this.last = {
                at: new Date(started).toISOString(),
                durationMs: Math.round((performance.now() - t0) * 10) / 10,
                members: members.length,
                ...(skipped ? { skipped } : {}),
                decisions,
            };
            return decisions;
        };
        // The fleet view follows an operation only when it settles: deciding meanwhile would repair
        // members a running scale is creating or removing.
        if (this.deps.scaler.busy()) return finish([], "an operation runs or waits");
        // A follower's repairs are refused by its scaler; once it leads, it decides on the back-off its
        // predecessor left in the store (history.ts), read before its first round. (`follow` says so at
        // once; a round that finds the scaler closed covers a hand-over it was not told of.)
        // Only the leader forgets members that left (a follower's view may lag, and the store is the leader's).
        if (!this.deps.scaler.accepts()) this.history.release();
        else {
            const notReady = await this.history.ready();
            if (notReady) return finish([], notReady);
            this.history.prune(new Set(members.map((m) => m.id)));
            if (this.convergence.take()) {
                const failed = this.convergence.status();
                const op = this.deps.scaler.converge();
                this.deps.log.info(
                    { operation: op.id, failures: failed?.failures, after: failed?.operation },
                    "running `up` again: the stack's last convergence failed transiently",
                );
                return finish([], "an `up` runs again after a transient failure");
            }
        }

        const gone = await this.gone(members);
        const providerDown = this.providersDown();
        const facts: MemberFacts[] = members.map((m) => {
            const h = this.deps.health(m.id);
            return {
                id: m.id,
                pool: m.pool,
                provider: m.provider,
                index: m.index,
                health: h?.state ?? "unknown",
                healthSince: h?.since ?? started,
                lastError: h?.lastError,
                gone: gone.get(m.id),
            };
        });
        // Nothing gone or unhealthy (the usual round): no need to read the pools' policies from the stack file.
        if (!facts.some((f) => f.gone || f.health === "unhealthy")) return finish([]);
        const pools = Object.fromEntries(
            this.deps.pools().map((p) => [
                p.name,
                // maxSurge 0 (with maxUnavailable): a repair of a member that serves nothing costs no capacity.
                { replaceUnhealthyAfterSeconds: p.replaceUnhealthyAfterSeconds, maxSurge: Math.max(p.maxSurge, 1) },
            ]),
        );
        const decisions = decideRepairs({
            now: started,
            members: facts,
            pools,
            history: this.history.entries,
            providerDown,
        });
        const refused = this.act(decisions);
        if (refused) return finish([], refused); // starting or stopping: the next round decides again
        return finish(decisions);
    }

    /**
     * Logs each decision and queues the repairs as one heal operation. Returns why nothing was queued when
     * the scaler does not accept work now (starting, stopping, not leading).
     */
    private act(decisions: Decision[]): string | undefined {
        for (const d of decisions) {
            const fields = { member: d.member, pool: d.pool, reason: d.reason, detail: d.detail };
            if (d.action === "repair") this.deps.log.info(fields, `repairing ${d.member} (${d.reason})`);
            else
                this.deps.log.warn(
                    { ...fields, skip: d.skip, why: d.why },
                    `not repairing ${d.member} (${d.reason}): ${d.why}`,
                );
        }
        const repairs = decisions.filter((d) => d.action === "repair");
        if (!repairs.length) return undefined;
        try {
            const op = this.deps.scaler.heal(
                Object.fromEntries(repairs.map((d) => [d.member, { reason: d.reason, detail: d.detail }])),
            );
            for (const d of repairs) this.deps.onRepair?.(d.pool, d.reason);
            this.deps.log.info({ operation: op.id, members: op.members }, "heal operation queued");
            return undefined;
        } catch (e) {
            if (!(e instanceof NotAcceptingError)) throw e;
            return e.message;
        }
    }

    /** Each provider entry's hook over its members; a hook that throws says nothing (logged). */
    private async gone(members: ProxyMember[]): Promise<Map<string, string>> {
        const out = new Map<string, string>();
        await Promise.all(
            [...this.deps.goneChecks()].map(async ([provider, check]) => {
                const mine = members.filter((m) => m.provider === provider);
                if (!mine.length) return;
                try {
                    for (const [id, why] of await check(mine, AbortSignal.timeout(30_000))) out.set(id, why);
                } catch (e) {
                    this.deps.log.warn(
                        { provider, err: e },
                        "liveness check failed; its members are judged by health probes alone this round",
                    );
                }
            }),
        );
        return out;
    }

    /** Provider entries whose last check failed (or that were not checked yet), with why. */
    private providersDown(): Map<string, string> {
        const down = new Map<string, string>();
        for (const r of this.deps.providers()) {
            if (r.ok) continue;
            const failing = r.targets
                .filter((t) => !t.ok)
                .map((t) => `${t.target}: ${t.stage ? `${t.stage}: ` : ""}${t.message}`);
            down.set(r.provider, failing.join("; ") || "not checked yet");
        }
        const before = new Set(this.down.map((d) => d.provider));
        for (const [provider, reason] of down)
            if (!before.has(provider))
                this.deps.log.warn(
                    { provider, reason },
                    `provider ${provider} is not healthy: its members are not repaired until it is`,
                );
        for (const p of before)
            if (!down.has(p))
                this.deps.log.info({ provider: p }, `provider ${p} is healthy again: its members are repaired again`);
        this.down = [...down].map(([provider, reason]) => ({ provider, reason }));
        return down;
    }
}
