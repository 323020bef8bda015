/**
 * Per-member outcome counts for rotation by blocks (blocks.ts): every lease release (its `outcome`, the
 * gateway's releases included) and every block reported after the fact (POST /v1/blocks) is one outcome
 * of its member. The one home of these counts: the fleet tells it (Fleet.onOutcome), the rotator reads it.
 *
 * Kept in this process: with the Redis store and several replicas, the leader counts only what it
 * released itself (docs/decisions/0052-rotate-blocks.md, "rotation by blocks counts the leader's outcomes").
 */
import type { OutcomeCounts } from "./blocks";

/** Outcomes kept per member, newest: a busy member's window is its latest this many (bounded memory). */
export const MAX_OUTCOMES_PER_MEMBER = 2000;

/** A release's outcome, or a block reported after the lease ended. */
export type CountedOutcome = "ok" | "blocked" | "error";

export class OutcomeWindow {
    /** Per member: outcome times (epoch ms) and whether each was a block, oldest first. */
    private readonly byMember = new Map<string, { at: number[]; blocked: boolean[] }>();

    constructor(
        /** Outcomes older than this are dropped (the longest window any pool asks for). */
        private keepMs: number,
        private readonly now: () => number = Date.now,
    ) {}

    /** The longest window in use (pools change with the stack file); older outcomes are dropped. */
    setKeep(ms: number): void {
        this.keepMs = ms;
    }

    record(member: string, outcome: CountedOutcome): void {
        if (this.keepMs <= 0) return;
        let e = this.byMember.get(member);
        if (!e) this.byMember.set(member, (e = { at: [], blocked: [] }));
        e.at.push(this.now());
        e.blocked.push(outcome === "blocked");
        if (e.at.length > MAX_OUTCOMES_PER_MEMBER) this.drop(e, e.at.length - MAX_OUTCOMES_PER_MEMBER);
    }

    /** The member's outcomes in the last `windowSeconds`. */
    counts(member: string, windowSeconds: number): OutcomeCounts {
        const e = this.byMember.get(member);
        if (!e) return { blocked: 0, total: 0 };
        const since = this.now() - windowSeconds * 1000;
        let blocked = 0;
        let total = 0;
        for (let i = e.at.length - 1; i >= 0 && e.at[i] > since; i--) {
            total++;
            if (e.blocked[i]) blocked++;
        }
        return { blocked, total };
    }

    /**
     * Drops outcomes past the longest window and members no longer present. A replaced member keeps its
     * name (indices are dense), so the rotator forgets it (`reset`) once its replacement runs.
     */
    prune(present: ReadonlySet<string>): void {
        const since = this.now() - this.keepMs;
        for (const [id, e] of this.byMember) {
            if (!present.has(id)) {
                this.byMember.delete(id);
                continue;
            }
            let n = 0;
            while (n < e.at.length && e.at[n] <= since) n++;
            this.drop(e, n);
            if (!e.at.length) this.byMember.delete(id);
        }
    }

    /** Forgets a member's outcomes: its replacement (same name, new process or machine) starts afresh. */
    reset(member: string): void {
        this.byMember.delete(member);
    }

    private drop(e: { at: number[]; blocked: boolean[] }, n: number): void {
        if (n <= 0) return;
        e.at.splice(0, n);
        e.blocked.splice(0, n);
    }
}
