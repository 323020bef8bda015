import { hasRoom, type MemberRec, type PoolRec, promote } from "./pool";
import { earlierHold, type PoliteHold, type SitePoliteness } from "./politeness";
import type { TargetCooldowns } from "./target-cooldowns";
import type { AcquireRequest } from "./types";

/**
 * The pick of a plain acquire: across the pools in scope, the least recently used member that is
 * eligible, unleased and rested (pool cooldown over, not resting for `target`). Each pool's ready list
 * is in LRU order, so its first rested member is its candidate; ties between pools go to the member that
 * joined first. Members whose pool cooldown ended are promoted first (paid once per release). With a
 * `zone`, only that zone's members count; members in `exclude` never do.
 * `skippedUntil` is the earliest end of a target rest that was skipped (for an exact Retry-After).
 * Per-site politeness (politeness.ts): a pool whose rule for `target` has its maxConcurrency in flight
 * is passed over whole, a member granted for the site less than minIntervalMs ago is walked past;
 * `held` is the earliest such hold (the `target-busy` answer when nothing is granted).
 */
export function pickLeastRecentlyUsed(
    scope: readonly PoolRec[],
    target: string | undefined,
    targets: TargetCooldowns,
    now: number,
    polite: SitePoliteness,
    zone?: string,
    exclude?: readonly string[],
): { best?: MemberRec; total: number; skippedUntil: number; held?: PoliteHold } {
    let best: MemberRec | undefined;
    let total = 0;
    let skippedUntil = Infinity;
    let held: PoliteHold | undefined;
    for (const pool of scope) {
        total += pool.members;
        const rule = polite.rule(pool, target);
        const full = polite.full(pool, rule, now);
        if (full) {
            held = earlierHold(held, full);
            continue;
        }
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
                const spaced = polite.spacedUntil(pool, rule, m.id);
                if (spaced > now) {
                    held = earlierHold(held, { pool: pool.name, rule: rule!.host, until: spaced });
                    continue;
                }
            }
            if (!best || m.lastUsedAt < best.lastUsedAt || (m.lastUsedAt === best.lastUsedAt && m.seq < best.seq))
                best = m;
            break;
        }
    }
    return { best, total, skippedUntil, held };
}

/**
 * Whether a session's member takes its next lease: eligible (healthy, not draining), with room (unleased, or
 * for a shared acquire below memberConcurrency of shared leases), in the
 * requested pool (and zone), and not resting because `target` blocked it. The pool cooldown and the plain target
 * rest exist to rotate members, which is what a session asks not to do (docs/decisions.md). Politeness
 * binds sessions too: a site at its cap, or a member inside its spacing for the site, does not stick
 * (the pick then answers `target-busy`, or moves the session as it would for a busy member).
 */
export function sessionSticks(
    m: MemberRec,
    req: AcquireRequest,
    targets: TargetCooldowns,
    polite: SitePoliteness,
    now: number,
): boolean {
    if (!m.eligible || !hasRoom(m, req.shared)) return false;
    const rule = polite.rule(m.pool, req.target);
    if (polite.full(m.pool, rule, now) || polite.spacedUntil(m.pool, rule, m.id) > now) return false;
    if (req.pool !== undefined && m.pool.name !== req.pool) return false;
    if (req.zone !== undefined && m.zone !== req.zone) return false;
    if (req.exclude?.includes(m.id)) return false;
    return req.target === undefined || targets.blockedUntil(req.target, m.id) <= now;
}
