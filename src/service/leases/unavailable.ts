import type { PoolRec } from "./pool";
import type { TargetCooldowns } from "./target-cooldowns";
import { matchesLabels } from "../../model/labels";
import { selectorOf, type AcquireRequest, type AcquireResult } from "./types";

export interface RetrySettings {
    busyRetryAfterSeconds: number;
    idleRetryAfterSeconds: number;
}

/**
 * The failed acquire's answer, with the earliest moment something in scope could be leased.
 * `total`: members in scope; `skippedUntil`: the earliest end of a target rest the acquire walked past.
 */
export function unavailable(
    scope: readonly PoolRec[],
    total: number,
    req: Pick<AcquireRequest, "target" | "zone" | "where">,
    skippedUntil: number,
    now: number,
    s: RetrySettings,
    targets: TargetCooldowns,
): Extract<AcquireResult, { ok: false }> {
    if (total === 0)
        return { ok: false, reason: "no-members", retryAfterSeconds: Math.max(1, s.idleRetryAfterSeconds) };
    const { target } = req;
    const where = selectorOf(req);
    let earliest = skippedUntil;
    for (const p of scope) {
        // A leased member may come back any moment; it then serves its pool cooldown first.
        if (p.leased > 0) earliest = Math.min(earliest, now + Math.max(s.busyRetryAfterSeconds * 1000, p.cooldownMs));
        if (target === undefined && where.length === 0) {
            const top = p.cooling.peek();
            if (top) earliest = Math.min(earliest, top.lastUsedAt + p.cooldownMs);
        } else {
            for (const m of p.cooling.values()) {
                if (!matchesLabels(m.labels, where)) continue;
                const rested = m.lastUsedAt + p.cooldownMs;
                earliest = Math.min(
                    earliest,
                    target === undefined ? rested : Math.max(rested, targets.until(target, m.id)),
                );
            }
        }
    }
    const seconds = earliest === Infinity ? s.idleRetryAfterSeconds : Math.ceil((earliest - now) / 1000);
    return { ok: false, reason: "none-available", retryAfterSeconds: Math.max(1, seconds) };
}
