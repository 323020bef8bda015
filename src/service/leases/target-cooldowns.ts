/**
 * Per-target cooldowns: after proxy P was used against target T, P rests for T (other targets may still
 * use it at once). Stored as target → (proxyId → entry), so the check during acquire is two map lookups.
 *
 * Numbers (all overridable through LeaseManagerOptions):
 * - `ok` / expired lease: P rests `targetCooldownMs` for T (default 0: no rest), and its block count resets.
 * - `blocked`: block count n += 1; P rests min(blockedMaxMs, blockedBaseMs · 2^(n-1)) for T:
 *   60 s, 120 s, 240 s, 480 s, 960 s, 1920 s, then 3600 s (the cap) by default.
 * - `error`: the proxy failed, not the target: plain `targetCooldownMs`, block count unchanged.
 * A block count is remembered for `blockedMaxMs` after its cooldown ends, so a proxy blocked again soon
 * after it comes back escalates, while one blocked once a day starts from the base again.
 */
export interface TargetCooldownSettings {
    targetCooldownMs: number;
    blockedBaseMs: number;
    blockedMaxMs: number;
}

interface Entry {
    until: number;
    blocks: number;
}

export type TargetOutcome = "ok" | "blocked" | "error" | "expired";

export class TargetCooldowns {
    private readonly byTarget = new Map<string, Map<string, Entry>>();

    constructor(private readonly s: TargetCooldownSettings) {}

    /** When `proxyId` may be used for `target` again (0 = now). O(1). */
    until(target: string, proxyId: string): number {
        return this.byTarget.get(target)?.get(proxyId)?.until ?? 0;
    }

    /**
     * When `proxyId` may be used for `target` again if it rests there because the target blocked it
     * (0 when it does not): the one target rest a sticky session does not skip.
     */
    blockedUntil(target: string, proxyId: string): number {
        const e = this.byTarget.get(target)?.get(proxyId);
        return e && e.blocks > 0 ? e.until : 0;
    }

    /**
     * Records how a lease against `target` ended. `restMs` replaces `targetCooldownMs` (a pool's
     * `restAfterOkSeconds`). Returns the new rest-until time.
     */
    record(target: string, proxyId: string, outcome: TargetOutcome, now: number, restMs?: number): number {
        let perProxy = this.byTarget.get(target);
        if (!perProxy) this.byTarget.set(target, (perProxy = new Map()));
        const e = perProxy.get(proxyId) ?? { until: 0, blocks: 0 };
        if (outcome === "blocked") {
            e.blocks += 1;
            // 2^(n-1) overflows to Infinity long before n matters; the cap keeps it finite.
            e.until = now + Math.min(this.s.blockedMaxMs, this.s.blockedBaseMs * 2 ** (e.blocks - 1));
        } else {
            if (outcome !== "error") e.blocks = 0;
            e.until = Math.max(e.until, now + (restMs ?? this.s.targetCooldownMs));
        }
        if (e.until <= now && e.blocks === 0) perProxy.delete(proxyId);
        else perProxy.set(proxyId, e);
        if (perProxy.size === 0) this.byTarget.delete(target);
        return e.until;
    }

    /** Drops entries that no longer matter; O(entries), meant for the periodic sweep. */
    prune(now: number): number {
        let dropped = 0;
        for (const [t, m] of this.byTarget) {
            for (const [id, e] of m) {
                const keepUntil = e.blocks > 0 ? e.until + this.s.blockedMaxMs : e.until;
                if (keepUntil <= now) {
                    m.delete(id);
                    dropped++;
                }
            }
            if (m.size === 0) this.byTarget.delete(t);
        }
        return dropped;
    }
}
