import { hasRoom, type MemberRec, type PoolRec, promote } from "./pool";
import { earlierHold, type PoliteHold, type SitePoliteness } from "./politeness";
import type { TargetCooldowns } from "./target-cooldowns";
import { matchesLabels } from "../../model/labels";
import { selectorOf, type AcquireRequest } from "./types";

/**
 * The pick of a plain acquire: across the pools in scope, the least recently used member that is
 * eligible, unleased and rested (pool cooldown over, not resting for `target`). Each pool's ready list
 * is in LRU order, so its first rested member is its candidate; ties between pools go to the member that
 * joined first. Members whose pool cooldown ended are promoted first (paid once per release). With a
 * selector (`zone`, `where`), only members whose labels match count (O(labels selected) per member
 * walked: a selective pick walks past the non-matching members ahead of its first match, so its cost is
 * bounded by the pool's size, as a zone's was); members in `exclude` never do.
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
    sel: Pick<AcquireRequest, "zone" | "where" | "exclude"> = {},
): { best?: MemberRec; total: number; skippedUntil: number; held?: PoliteHold } {
    const walk = new CandidateWalk({ target, ...sel }, targets, polite, now);
    let best: MemberRec | undefined;
    let total = 0;
    for (const pool of scope) {
        total += pool.members;
        const site = walk.pool(pool);
        if (!site) continue;
        promote(pool, now);
        for (let m = pool.ready.first(); m; m = pool.ready.after(m)) {
            // Walked past: another zone's (a zone-scoped acquire costs the members ahead of it), one that
            // failed this request already (a gateway retry), or one resting for the target.
            if (!walk.takes(pool, site.rule, m)) continue;
            if (!best || m.lastUsedAt < best.lastUsedAt || (m.lastUsedAt === best.lastUsedAt && m.seq < best.seq))
                best = m;
            break;
        }
    }
    return { best, total, skippedUntil: walk.skippedUntil, held: walk.held };
}

/**
 * The filters every pick walks its candidates through — the pool's site at its cap (per-site
 * politeness), then per member: zone, `exclude`, a target rest, the member's spacing for the site —
 * and what they held back: the earliest end of a skipped target rest (`skippedUntil`, for an exact
 * Retry-After) and the earliest politeness hold (`held`, the `target-busy` answer). The idle pick
 * (above) and the shared one (shared.ts) differ only in which members they walk and how they rank them.
 */
export class CandidateWalk {
    skippedUntil = Infinity;
    held?: PoliteHold;
    private readonly where: [string, string][];

    constructor(
        private readonly req: Pick<AcquireRequest, "target" | "zone" | "where" | "exclude">,
        private readonly targets: TargetCooldowns,
        private readonly polite: SitePoliteness,
        private readonly now: number,
    ) {
        this.where = selectorOf(req);
    }

    /** The pool's site rule, or undefined when the site is at its cap there (the pool is passed over whole). */
    pool(pool: PoolRec): { rule: ReturnType<SitePoliteness["rule"]> } | undefined {
        const rule = this.polite.rule(pool, this.req.target);
        const full = this.polite.full(pool, rule, this.now);
        if (!full) return { rule };
        this.held = earlierHold(this.held, full);
        return undefined;
    }

    /** Whether member `m` of `pool` may be taken; a member held back by a rest or a spacing is recorded. */
    takes(pool: PoolRec, rule: ReturnType<SitePoliteness["rule"]>, m: MemberRec): boolean {
        const { target, exclude } = this.req;
        if (!matchesLabels(m.labels, this.where)) return false;
        if (exclude !== undefined && exclude.includes(m.id)) return false;
        if (target === undefined) return true;
        const until = this.targets.until(target, m.id);
        if (until > this.now) {
            this.skippedUntil = Math.min(this.skippedUntil, until);
            return false;
        }
        const spaced = this.polite.spacedUntil(pool, rule, m.id);
        if (spaced > this.now) {
            this.held = earlierHold(this.held, { pool: pool.name, rule: rule!.host, until: spaced });
            return false;
        }
        return true;
    }
}

/**
 * Whether a session's member takes its next lease: eligible (healthy, not draining), with room (unleased, or
 * for a shared acquire below memberConcurrency of shared leases), in the
 * requested pool (and zone), and not resting because `target` blocked it. The pool cooldown and the plain target
 * rest exist to rotate members, which is what a session asks not to do (docs/decisions/0038-leases.md). Politeness
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
    if (!matchesLabels(m.labels, selectorOf(req))) return false;
    if (req.exclude?.includes(m.id)) return false;
    return req.target === undefined || targets.blockedUntil(req.target, m.id) <= now;
}
