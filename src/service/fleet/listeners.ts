import type { ReleaseOutcome } from "../leases/types";

/**
 * Who the fleet (fleet.ts) tells of what happens at its lease door: the drainer and the gateway's
 * waiting room wait on releases, the rotation counts outcomes, the autoscaler counts refusals. The
 * fleet registers them and calls `released`, `outcome` and `refused` where those happen.
 */
export class FleetListeners {
    /** Called after every successful release (the drainer waits on it). */
    private readonly releaseListeners = new Set<() => void>();
    /** Told of every release's outcome and every block reported after it (rotation by blocks counts them). */
    private outcomeListener?: (member: string, outcome: ReleaseOutcome) => void;
    /** Told of every request refused for want of a member, by pool and door (the autoscaler's demand signal). */
    private refusedListener?: (pool: string, via: "lease" | "gateway") => void;

    /** Returns the removal of `fn`. */
    onRelease(fn: () => void): () => void {
        this.releaseListeners.add(fn);
        return () => this.releaseListeners.delete(fn);
    }

    /** Sets the one listener told of every outcome. */
    onOutcome(fn: (member: string, outcome: ReleaseOutcome) => void): void {
        this.outcomeListener = fn;
    }

    /** Sets the one listener told of refused acquires. */
    onRefused(fn: (pool: string, via: "lease" | "gateway") => void): void {
        this.refusedListener = fn;
    }

    /** A successful release of a lease on `member`. */
    released(member: string, outcome: ReleaseOutcome): void {
        for (const fn of this.releaseListeners) fn();
        this.outcomeListener?.(member, outcome);
    }

    /** An outcome without a release (a block reported after the fact). */
    outcome(member: string, outcome: ReleaseOutcome): void {
        this.outcomeListener?.(member, outcome);
    }

    /** A request of `pool` found no member. */
    refused(pool: string, via: "lease" | "gateway"): void {
        try {
            this.refusedListener?.(pool, via);
        } catch {
            /* the autoscaler's trouble (a journal write) must not fail the request or leak its slot */
        }
    }
}
