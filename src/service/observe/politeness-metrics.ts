import { Counter, type Registry } from "prom-client";

/** What became of a request politeness held back: refused (429 target_busy), or waited (the gateway's room). */
export const POLITENESS_RESULTS = ["refused", "waited"] as const;
const DOORS = ["lease", "gateway"] as const;

/**
 * Per-site politeness (the pools' `targets`) as metrics: requests it held back, by pool, rule and door.
 * `rule` is the configured rule's host (`.shop.example`), never the request's host, so the series are
 * bounded by the config: a crawler cannot mint label values.
 */
export function createPolitenessMetrics(registry: Registry, livePools?: () => Set<string>) {
    const seen = new Map<string, Set<string>>();
    const holds = new Counter({
        name: "egress_politeness_holds_total",
        help: "Requests per-site politeness held back, by pool, rule (the configured host), door (lease, gateway) and result (refused: 429 target_busy; waited: the gateway waited for the site)",
        labelNames: ["pool", "rule", "door", "result"],
        registers: [registry],
        collect() {
            if (!livePools) return;
            const live = livePools();
            for (const [pool, rules] of seen) {
                if (live.has(pool)) continue;
                for (const rule of rules)
                    for (const door of DOORS)
                        for (const result of POLITENESS_RESULTS) this.remove({ pool, rule, door, result });
                seen.delete(pool);
            }
        },
    });
    return {
        held(pool: string, rule: string, door: (typeof DOORS)[number], result: (typeof POLITENESS_RESULTS)[number]) {
            if (!seen.has(pool)) seen.set(pool, new Set());
            seen.get(pool)!.add(rule);
            holds.inc({ pool, rule, door, result });
        },
    };
}

export type PolitenessMetrics = ReturnType<typeof createPolitenessMetrics>;
