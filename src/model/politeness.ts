/**
 * Per-site politeness of a pool (`targets` in the pool config): how many leases (gateway requests) one
 * site may have in flight through the whole pool, and how soon one member may be used for it again.
 * The lease stores enforce it (src/service/leases, src/service/store/scripts.ts); the rule that picks
 * a site's entry is `politenessRuleFor`, mirrored by the Redis scripts.
 */
import { z } from "zod";

/** The longest spacing a rule may ask for: beyond a minute, a crawler wants a schedule, not a proxy pool. */
export const MIN_INTERVAL_MAX_MS = 600_000;

/** A host name (`shop.example`) or a suffix pattern (`.shop.example`: the host and every subdomain). */
const RULE_HOST = /^\.?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/;

export const politenessRuleSchema = z
    .strictObject({
        /**
         * The site, matched against the lease's target (lower-cased, without a trailing dot): `shop.example`
         * matches exactly that name; `.shop.example` matches `shop.example` and every name under it.
         */
        host: z.string().max(253, { message: "must be at most 253 characters" }).regex(RULE_HOST, {
            message:
                "must be a lower-case host name (`shop.example`) or a suffix pattern (`.shop.example`, the host and its subdomains)",
        }),
        /** Most leases with a matching target in flight at once, across every member and replica. */
        maxConcurrency: z
            .number()
            .int({ message: "must be a whole number" })
            .min(1, { message: "must be 1 or more" })
            .optional(),
        /** Milliseconds between the starts of two leases of one member for this site. */
        minIntervalMs: z
            .number()
            .int({ message: "must be a whole number" })
            .min(0, { message: "must be 0 or more" })
            .max(MIN_INTERVAL_MAX_MS, { message: `must be at most ${MIN_INTERVAL_MAX_MS} (10 minutes)` })
            .optional(),
    })
    .refine((r) => r.maxConcurrency !== undefined || r.minIntervalMs !== undefined, {
        message: "needs at least one of `maxConcurrency` or `minIntervalMs`",
    });

export const politenessSchema = z.array(politenessRuleSchema).superRefine((rules, ctx) => {
    const seen = new Map<string, number>();
    rules.forEach((r, i) => {
        const first = seen.get(r.host);
        if (first !== undefined)
            ctx.addIssue({
                code: "custom",
                path: [i, "host"],
                message: `duplicates targets[${first}] ("${r.host}")`,
            });
        else seen.set(r.host, i);
    });
});

export type PolitenessRule = z.infer<typeof politenessRuleSchema>;

/** The rules in the order they are tried: exact names first, then suffixes, longest (most specific) first. */
export function orderRules(rules: readonly PolitenessRule[]): PolitenessRule[] {
    const rank = (r: PolitenessRule) => (r.host.startsWith(".") ? 1 : 0);
    return [...rules].sort((a, b) => rank(a) - rank(b) || b.host.length - a.host.length);
}

/** A lease target as the rules see it: lower-cased, without a trailing dot. */
export function ruleTarget(target: string): string {
    const t = target.toLowerCase();
    return t.endsWith(".") ? t.slice(0, -1) : t;
}

/** The rule of `target` among `ordered` (orderRules' order): the first that matches, if any. */
export function politenessRuleFor(
    ordered: readonly PolitenessRule[],
    target: string | undefined,
): PolitenessRule | undefined {
    if (target === undefined || ordered.length === 0) return undefined;
    const t = ruleTarget(target);
    for (const r of ordered) {
        if (r.host.startsWith(".") ? t === r.host.slice(1) || t.endsWith(r.host) : t === r.host) return r;
    }
    return undefined;
}
