import { type MemberRec, type PoolRec, promote } from "./pool";
import type { TargetCooldowns } from "./target-cooldowns";
import type { AcquireRequest } from "./types";

/**
 * The pick of a plain acquire: across the pools in scope, the least recently used member that is
 * eligible, unleased and rested (pool cooldown over, not resting for `target`). Each pool's ready list
 * is in LRU order, so its first rested member is its candidate; ties between pools go to the member that
 * joined first. Members whose pool cooldown ended are promoted first (paid once per release). With a
 * `zone`, only that zone's members count; members in `exclude` never do.
 * `skippedUntil` is the earliest end of a target rest that was skipped (for an exact Retry-After).
 */
export function pickLeastRecentlyUsed(
    scope: readonly PoolRec[],
    target: string | undefined,
    targets: TargetCooldowns,
    now: number,
    zone?: string,
    exclude?: readonly string[],
): { best?: MemberRec; total: number; skippedUntil: number } {
    let best: MemberRec | undefined;
    let total = 0;
    let skippedUntil = Infinity;
    for (const pool of scope) {
        total += pool.members;
        promote(pool, now);
        for (let m = pool.ready.first(); m; m = pool.ready.after(m)) {
            // Another zone's member: walked past (a zone-scoped acquire costs the members ahead of it).
            if (zone !== undefined && m.zone !== zone) continue;
            // A member that already failed this request (a gateway retry): walked past like another zone's.
            if (exclude !== undefined && exclude.includes(m.id)) continue;
            if (target !== undefined) {
                const until = targets.until(target, m.id);
                if (until > now) {
                    skippedUntil = Math.min(skippedUntil, until);
                    continue;
                }
            }
            if (!best || m.lastUsedAt < best.lastUsedAt || (m.lastUsedAt === best.lastUsedAt && m.seq < best.seq))
                best = m;
            break;
        }
    }
    return { best, total, skippedUntil };
}

/**
 * Whether a session's member takes its next lease: eligible (healthy, not draining), unleased, in the
 * requested pool (and zone), and not resting because `target` blocked it. The pool cooldown and the plain target
 * rest exist to rotate members, which is what a session asks not to do (docs/decisions.md).
 */
export function sessionSticks(m: MemberRec, req: AcquireRequest, targets: TargetCooldowns, now: number): boolean {
    if (!m.eligible || m.lease) return false;
    if (req.pool !== undefined && m.pool.name !== req.pool) return false;
    if (req.zone !== undefined && m.zone !== req.zone) return false;
    if (req.exclude?.includes(m.id)) return false;
    return req.target === undefined || targets.blockedUntil(req.target, m.id) <= now;
}
