/**
 * The reconcile loop's decisions, as pure functions: member facts and the time in, one decision per
 * member that needs a repair out. No I/O, so every rule is tested directly (test/unit/heal-decide.test.ts).
 */

export type HealReason = "gone" | "unhealthy";

/** Why a member that needs a repair is not repaired this round. */
export type SkipReason = "backoff" | "provider-unhealthy" | "max-surge";

/** One member as the loop sees it. */
export interface MemberFacts {
    id: string;
    pool: string;
    provider: string;
    /** Index in the pool: ties are broken by it, so decisions are stable. */
    index: number;
    health: "healthy" | "unhealthy" | "unknown";
    /** Epoch ms the member entered `health`. */
    healthSince: number;
    /** Set when the kind's liveness hook says the member is gone (process dead, domain shut off…): why, in words. */
    gone?: string;
    /** The health engine's last error, for the decision's detail. */
    lastError?: string;
}

export interface PoolHealPolicy {
    /** 0 = never replace an unhealthy (but not gone) member. */
    replaceUnhealthyAfterSeconds: number;
    maxSurge: number;
}

/** Per-member memory of the loop across rounds. */
export interface MemberHistory {
    /** Consecutive failed repairs. */
    failures: number;
    /** Epoch ms before which no repair is tried (after a failure). */
    retryAt?: number;
    /** Epoch ms of the last successful repair: unhealthy time before it does not count. */
    repairedAt?: number;
}

export interface DecideInput {
    now: number;
    members: MemberFacts[];
    pools: Record<string, PoolHealPolicy>;
    history: ReadonlyMap<string, MemberHistory>;
    /** Provider entry → why it is not healthy now (unset = healthy). From src/service/observe/provider-checks.ts. */
    providerDown: ReadonlyMap<string, string>;
}

export type Decision =
    | { member: string; pool: string; reason: HealReason; detail: string; action: "repair" }
    | {
          member: string;
          pool: string;
          reason: HealReason;
          detail: string;
          action: "skip";
          skip: SkipReason;
          until?: number;
          why: string;
      };

/**
 * Which members need a repair, and of those, which are repaired now. A member needs one when it is
 * gone, or unhealthy for at least the pool's `replaceUnhealthyAfterSeconds` (counted from its last
 * repair at the latest: the monitor's state outlives a replacement on the same address). It is skipped
 * while its provider is down, while it backs off after a failed repair, and beyond `maxSurge` per pool
 * (gone members first, then the longest unhealthy, then by index; listed pool by pool).
 */
export function decideRepairs(input: DecideInput): Decision[] {
    const candidates: { m: MemberFacts; reason: HealReason; detail: string; since: number }[] = [];
    for (const m of input.members) {
        const policy = input.pools[m.pool];
        if (!policy) continue; // a pool no longer in the config: scaling removes it, not repair
        if (m.gone) {
            candidates.push({ m, reason: "gone", detail: m.gone, since: 0 });
            continue;
        }
        if (m.health !== "unhealthy" || policy.replaceUnhealthyAfterSeconds === 0) continue;
        const since = Math.max(m.healthSince, input.history.get(m.id)?.repairedAt ?? 0);
        const forMs = input.now - since;
        if (forMs < policy.replaceUnhealthyAfterSeconds * 1000) continue;
        candidates.push({
            m,
            reason: "unhealthy",
            detail: `unhealthy for ${Math.round(forMs / 1000)} s (limit ${policy.replaceUnhealthyAfterSeconds} s)${m.lastError ? `; last: ${m.lastError}` : ""}`,
            since,
        });
    }
    candidates.sort(
        (a, b) =>
            (a.reason === b.reason ? 0 : a.reason === "gone" ? -1 : 1) ||
            a.m.pool.localeCompare(b.m.pool) ||
            a.since - b.since ||
            a.m.index - b.m.index,
    );

    const repairing = new Map<string, number>();
    const out: Decision[] = [];
    for (const { m, reason, detail } of candidates) {
        const base = { member: m.id, pool: m.pool, reason, detail };
        const down = input.providerDown.get(m.provider);
        if (down) {
            out.push({
                ...base,
                action: "skip",
                skip: "provider-unhealthy",
                why: `provider \`${m.provider}\` is not healthy: ${down}`,
            });
            continue;
        }
        const h = input.history.get(m.id);
        if (h?.retryAt !== undefined && input.now < h.retryAt) {
            out.push({
                ...base,
                action: "skip",
                skip: "backoff",
                until: h.retryAt,
                why: `${h.failures} failed repair${h.failures > 1 ? "s" : ""}; next try in ${Math.ceil((h.retryAt - input.now) / 1000)} s`,
            });
            continue;
        }
        const n = repairing.get(m.pool) ?? 0;
        const surge = input.pools[m.pool].maxSurge;
        if (n >= surge) {
            out.push({
                ...base,
                action: "skip",
                skip: "max-surge",
                why: `pool \`${m.pool}\` repairs at most ${surge} member${surge > 1 ? "s" : ""} at once (maxSurge)`,
            });
            continue;
        }
        repairing.set(m.pool, n + 1);
        out.push({ ...base, action: "repair" });
    }
    return out;
}

/** Backoff after failed repairs: 1 min, doubling, at most 30 min. */
export const HEAL_BACKOFF = { baseMs: 60_000, maxMs: 30 * 60_000 };

/** The history after a repair settled (`ok`), with the next allowed try after a failure. */
export function afterRepair(
    h: MemberHistory | undefined,
    ok: boolean,
    now: number,
    backoff = HEAL_BACKOFF,
): MemberHistory {
    if (ok) return { failures: 0, repairedAt: now };
    const failures = (h?.failures ?? 0) + 1;
    return { ...h, failures, retryAt: now + backoffMs(failures, backoff) };
}

/** Wait after `failures` consecutive failed repairs (≥ 1). */
export function backoffMs(failures: number, backoff = HEAL_BACKOFF): number {
    return Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.min(30, Math.max(0, failures - 1)));
}
