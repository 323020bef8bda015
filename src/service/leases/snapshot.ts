import { inUse, MemberRec, NEVER, PoolRec } from "./pool";
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
            // A member carrying any lease, exclusive or shared, is in use (utilization counts it whole).
            state: inUse(m) ? "leased" : !m.eligible ? "ineligible" : availableAt > now ? "cooldown" : "available",
        };
        if (m.lastUsedAt !== NEVER) s.lastUsedAt = m.lastUsedAt;
        const first = m.lease ?? m.shared.values().next().value;
        if (first) s.leaseId = first.lease.id;
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
