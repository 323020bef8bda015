import { MemberRec, NEVER, PoolRec } from "./pool";
import type { MemberSnapshot, PoolStats } from "./types";

/** Per-member lease state, in the order given (the manager passes arrival order). */
export function snapshotOf(members: Iterable<MemberRec>, now: number): MemberSnapshot[] {
    const out: MemberSnapshot[] = [];
    for (const m of members) {
        const availableAt = m.lastUsedAt + m.pool.cooldownMs;
        const s: MemberSnapshot = {
            id: m.id,
            pool: m.pool.name,
            eligible: m.eligible,
            errors: m.errors,
            state: m.lease ? "leased" : !m.eligible ? "ineligible" : availableAt > now ? "cooldown" : "available",
        };
        if (m.lastUsedAt !== NEVER) s.lastUsedAt = m.lastUsedAt;
        if (m.lease) s.leaseId = m.lease.lease.id;
        if (s.state === "cooldown") s.availableAt = availableAt;
        out.push(s);
    }
    return out;
}

/** Counts per pool of a snapshot; every pool in `pools` is listed, even when empty. */
export function statsOf(pools: Iterable<PoolRec>, snapshot: readonly MemberSnapshot[]): Record<string, PoolStats> {
    const out: Record<string, PoolStats> = {};
    for (const p of pools) out[p.name] = { members: 0, available: 0, leased: 0, cooldown: 0, ineligible: 0 };
    for (const s of snapshot) {
        const p = out[s.pool];
        p.members++;
        p[s.state]++;
    }
    return out;
}
