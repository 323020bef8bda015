import { errorClassOf } from "../../../../components/shared/errors";
import type { Operation } from "../../../state/operations/operation";
import { afterRepair, HEAL_BACKOFF, type MemberHistory } from "./decide";

/** What GET /v1/heal shows while the stack's convergence waits to be tried again. */
export interface ConvergenceRetryStatus {
    /** Consecutive count-setting operations that failed transiently. */
    failures: number;
    /** When the loop queues the next `up` (ISO). */
    retryAt: string;
    /** The last one that failed, and why. */
    operation: string;
    error: string;
}

/**
 * The stack's convergence, tried again. A scale, autoscale or start-up `up` that failed `[transient]`
 * (a host that dropped the connection mid-upload, a cloud's 503) leaves the stack short of its file's
 * counts, and its message says "the next up tries again". Nothing else would run that `up`: the
 * reconcile loop repairs members that exist, and a member whose create failed may not exist at all. So
 * the loop queues a plain `up` once the heal back-off (1 min doubling to 30 min) has passed after such a
 * failure. A succeeded count-setting operation ends it; so does a permanent or quota failure (an operator
 * must act: the operation says why, and retrying would only repeat it).
 *
 * Kept by the leader only: a new leader converges when it takes the stack (start/leading.ts) anyway.
 */
export class ConvergenceRetry {
    private history?: MemberHistory;
    private last?: { operation: string; error: string };
    /** An `up` this loop queued has not settled yet. */
    private queued = false;

    constructor(
        private readonly backoff = HEAL_BACKOFF,
        private readonly now: () => number = Date.now,
    ) {}

    /**
     * A count-setting operation settled: returns the retry time when it failed transiently (to log),
     * else undefined. Interrupted operations change nothing (a stop or a lost lock: the next leader
     * converges).
     */
    settled(op: Operation): number | undefined {
        this.queued = false;
        if (op.status !== "succeeded" && op.status !== "failed") return undefined;
        if (op.status === "succeeded" || errorClassOf(op.error ?? "") !== "transient") {
            this.forget();
            return undefined;
        }
        this.history = afterRepair(this.history, false, this.now(), this.backoff);
        this.last = { operation: op.id, error: op.error ?? "" };
        return this.history.retryAt;
    }

    /** True once when a retry is due: the caller queues the `up` (and the next `settled` says how it went). */
    take(): boolean {
        const at = this.history?.retryAt;
        if (this.queued || at === undefined || this.now() < at) return false;
        this.queued = true;
        return true;
    }

    /** This replica stopped leading: the next leader converges on its own. */
    forget(): void {
        this.history = undefined;
        this.last = undefined;
        this.queued = false;
    }

    status(): ConvergenceRetryStatus | undefined {
        const h = this.history;
        if (!h?.retryAt || !this.last) return undefined;
        return { failures: h.failures, retryAt: new Date(h.retryAt).toISOString(), ...this.last };
    }
}
