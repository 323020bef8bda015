import type { ReleaseResult, Removal } from "./types";

export interface Tombstone {
    cause: "ttl" | "member-removed";
    endedAt: number;
    removal?: Removal;
}

/**
 * Leases that ended without a release, remembered so a late release gets `expired` (410), not 404.
 * Kept in end order (a Map keeps insertion order), so pruning stops at the first young one, and capped
 * (oldest dropped first) so a flood of expiring leases cannot grow memory without bound.
 */
export class Tombstones {
    private readonly byId = new Map<string, Tombstone>();

    constructor(
        private readonly keepMs: number,
        private readonly max: number,
    ) {}

    add(id: string, t: Tombstone): void {
        this.byId.set(id, t);
        if (this.byId.size > this.max) this.byId.delete(this.byId.keys().next().value!);
    }

    /** The release answer for an id that is not a live lease. */
    answer(id: string): Extract<ReleaseResult, { ok: false }> {
        const t = this.byId.get(id);
        if (!t) return { ok: false, reason: "unknown-lease" };
        return t.removal
            ? { ok: false, reason: "expired", cause: t.cause, endedAt: t.endedAt, removal: t.removal }
            : { ok: false, reason: "expired", cause: t.cause, endedAt: t.endedAt };
    }

    prune(now: number): void {
        const cutoff = now - this.keepMs;
        for (const [id, t] of this.byId) {
            if (t.endedAt > cutoff) break;
            this.byId.delete(id);
        }
    }
}
