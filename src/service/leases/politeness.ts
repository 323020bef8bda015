import { orderRules, politenessRuleFor, type PolitenessRule } from "../../model/politeness";
import type { AcquireResult } from "./types";

/**
 * Per-site politeness in the memory store (the pool's `targets`, src/model/politeness.ts): leases in
 * flight per (pool, rule) and, per (pool, rule, member), when the member may be granted for that site
 * again (minIntervalMs after its last grant's start). The Redis store keeps the same two things in
 * Redis (store/politeness-lua.ts); both answer `target-busy` when only these limits stop a grant.
 */
export interface PoolPoliteness {
    /** The pool's rules in the order they are tried (orderRules). */
    rules: PolitenessRule[];
    /** Leases in flight per rule host. */
    inFlight: Map<string, number>;
}

/** What of a pool's record (pool.ts PoolRec) politeness reads: its name and its politeness state. */
interface PoolRec {
    name: string;
    polite: PoolPoliteness;
}

export function newPoolPoliteness(rules: readonly PolitenessRule[] = []): PoolPoliteness {
    return { rules: orderRules(rules), inFlight: new Map() };
}

/** Why politeness held a grant back: the site's cap (`full`) or a member's spacing, until when. */
export interface PoliteHold {
    pool: string;
    rule: string;
    /** Epoch ms when trying again may succeed. */
    until: number;
}

export class SitePoliteness {
    /** `${pool}\n${rule}\n${member}` → when the member may be granted for the rule's site again. */
    private readonly spacing = new Map<string, number>();

    constructor(private readonly busyRetryMs: number) {}

    /** The rule of `target` in pool `p`, if one matches. */
    rule(p: PoolRec, target: string | undefined): PolitenessRule | undefined {
        return politenessRuleFor(p.polite.rules, target);
    }

    /** The hold when the site has its `maxConcurrency` leases in flight through the pool, else undefined. */
    full(p: PoolRec, rule: PolitenessRule | undefined, now: number): PoliteHold | undefined {
        if (rule?.maxConcurrency === undefined) return undefined;
        if ((p.polite.inFlight.get(rule.host) ?? 0) < rule.maxConcurrency) return undefined;
        return { pool: p.name, rule: rule.host, until: now + this.busyRetryMs };
    }

    /** When member `id` may be granted for the rule's site again (0 = now). */
    spacedUntil(p: PoolRec, rule: PolitenessRule | undefined, id: string): number {
        if (!rule?.minIntervalMs) return 0;
        return this.spacing.get(`${p.name}\n${rule.host}\n${id}`) ?? 0;
    }

    /** A lease of member `id` for the rule's site starts now. Returns the rule host to end it with. */
    granted(p: PoolRec, rule: PolitenessRule | undefined, id: string, now: number): string | undefined {
        if (!rule) return undefined;
        p.polite.inFlight.set(rule.host, (p.polite.inFlight.get(rule.host) ?? 0) + 1);
        if (rule.minIntervalMs) this.spacing.set(`${p.name}\n${rule.host}\n${id}`, now + rule.minIntervalMs);
        return rule.host;
    }

    /** A lease counted under `host` ended (however: released, expired, its member removed). */
    ended(p: PoolRec, host: string | undefined): void {
        if (host === undefined) return;
        const n = (p.polite.inFlight.get(host) ?? 1) - 1;
        if (n > 0) p.polite.inFlight.set(host, n);
        else p.polite.inFlight.delete(host);
    }

    /** Drops spacings that ran out (the periodic sweep). */
    prune(now: number): void {
        for (const [k, until] of this.spacing) if (until <= now) this.spacing.delete(k);
    }
}

/** The earlier of two holds (undefined counts as none). */
export function earlierHold(a: PoliteHold | undefined, b: PoliteHold | undefined): PoliteHold | undefined {
    if (!a) return b;
    if (!b) return a;
    return b.until < a.until ? b : a;
}

/** The answer when only politeness held a grant back: 429 target_busy, Retry-After until the hold ends. */
export function targetBusy(held: PoliteHold, now: number): AcquireResult {
    const retryAfterSeconds = Math.max(1, Math.ceil((held.until - now) / 1000));
    return { ok: false, reason: "target-busy", retryAfterSeconds, pool: held.pool, rule: held.rule };
}
