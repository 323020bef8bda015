import { GATEWAY_MEMBER_CONCURRENCY_DEFAULT } from "../../model/pool-policies";
import type { MemberRec, PoolRec } from "./pool";
import { CandidateWalk, type pickLeastRecentlyUsed } from "./pick";
import { earlierHold, type PoliteHold, type SitePoliteness } from "./politeness";
import type { TargetCooldowns } from "./target-cooldowns";
import type { PoolConfig } from "../../model/pool";
import type { AcquireRequest, PoolLeaseSettings } from "./types";

/**
 * The second pick of a shared (gateway) acquire, when no idle member could take it
 * (pickLeastRecentlyUsed comes first: an idle member is the least loaded of all): among the members of
 * the pools in scope that already carry shared leases and have room for another (`PoolRec.sharing`),
 * the least loaded, then the least recently used, then the one that joined first. The same filters as
 * the idle pick: zone, exclude, target rest, per-site politeness. The pool cooldown does not apply: the
 * member is in use already, and the cooldown rotates members between uses.
 * O(members in `sharing`): few per pool (only those carrying gateway requests and not full).
 */
export function pickLeastLoaded(
    scope: readonly PoolRec[],
    req: AcquireRequest,
    targets: TargetCooldowns,
    now: number,
    polite: SitePoliteness,
): { best?: MemberRec; skippedUntil: number; held?: PoliteHold } {
    const walk = new CandidateWalk(req, targets, polite, now);
    let best: MemberRec | undefined;
    for (const pool of scope) {
        if (pool.sharing.size === 0) continue;
        const site = walk.pool(pool);
        if (!site) continue;
        for (const m of pool.sharing) if (walk.takes(pool, site.rule, m) && (!best || lighter(m, best))) best = m;
    }
    return { best, skippedUntil: walk.skippedUntil, held: walk.held };
}

function lighter(a: MemberRec, b: MemberRec): boolean {
    if (a.shared.size !== b.shared.size) return a.shared.size < b.shared.size;
    if (a.lastUsedAt !== b.lastUsedAt) return a.lastUsedAt < b.lastUsedAt;
    return a.seq < b.seq;
}

type Pick = ReturnType<typeof pickLeastRecentlyUsed>;

/**
 * A shared acquire the idle pick (`idle`) could not serve: the least-loaded member with room, or, when
 * there is none either, the refusal's facts of both picks (earliest politeness hold, earliest target rest).
 */
export function orLeastLoaded(
    idle: Pick,
    scope: readonly PoolRec[],
    req: AcquireRequest,
    targets: TargetCooldowns,
    now: number,
    polite: SitePoliteness,
): Pick {
    const loaded = pickLeastLoaded(scope, req, targets, now, polite);
    if (loaded.best) return { best: loaded.best, total: idle.total, skippedUntil: idle.skippedUntil };
    const skippedUntil = Math.min(idle.skippedUntil, loaded.skippedUntil);
    return { total: idle.total, skippedUntil, held: earlierHold(idle.held, loaded.held) };
}

/** A pool's `gateway.memberConcurrency` as both stores use it: the default when unset, a whole number ≥ 1. */
export function memberConcurrencyOf(c: { memberConcurrency?: number }): number {
    return Math.max(1, Math.floor(c.memberConcurrency ?? GATEWAY_MEMBER_CONCURRENCY_DEFAULT));
}

/** The lease settings of each configured pool, as both stores take them (LeaseStore.setMembers). */
export function poolLeaseSettings(pools: readonly PoolConfig[]): Record<string, PoolLeaseSettings> {
    return Object.fromEntries(
        pools.map((p) => [
            p.name,
            {
                cooldownSeconds: p.cooldownSeconds,
                sessionTtlSeconds: p.sessionTtlSeconds,
                restAfterOkSeconds: p.restAfterOkSeconds,
                targets: p.targets,
                memberConcurrency: p.gateway?.memberConcurrency,
            },
        ]),
    );
}
