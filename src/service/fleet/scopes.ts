/**
 * The pools and labels an acquire may name, and the refusal of one that names neither a configured pool
 * nor a label value its scope has had (Fleet.acquire answers it before asking the lease store). Separate
 * from fleet.ts because this is its own memory with its own rule: label values (zones among them) are
 * remembered after their last member goes, pools are exactly the last sync's.
 */
import type { PoolConfig, ProxyMember } from "../../model";
import { memberLabels, selectorOf, type AcquireRequest } from "../leases/types";
import type { FleetAcquire } from "./views";

export class KnownScopes {
    private pools = new Set<string>();
    /**
     * Label values members had, per pool and ("*") for all, per label, since this process started: grown
     * on every sync for selecting acquires. Remembered after a value's last member goes, so a request for
     * it is a 503 (nothing has it now; a scale-up or repair may bring one back), not a 400 calling a real
     * value a typo. A scope is here once it has had a member, even one without labels.
     */
    private labels = new Map<string, Map<string, Set<string>>>();

    /** Takes the pools and members of a sync (Fleet.sync), with each member's labels (by id). */
    sync(
        members: readonly ProxyMember[],
        pools: readonly PoolConfig[],
        labels: ReadonlyMap<string, Record<string, string>>,
    ): void {
        this.pools = new Set(pools.map((p) => p.name));
        for (const m of members) {
            for (const scope of ["*", m.pool]) {
                let keys = this.labels.get(scope);
                if (!keys) this.labels.set(scope, (keys = new Map()));
                for (const [k, v] of Object.entries(labels.get(m.id) ?? {})) {
                    if (!keys.has(k)) keys.set(k, new Set());
                    keys.get(k)!.add(v);
                }
            }
        }
    }

    /** Whether `pool` is configured. */
    has(pool: string): boolean {
        return this.pools.has(pool);
    }

    /** The refusal of a request naming an unknown pool, label or value; undefined when all are known (or unnamed). */
    refusal(req: AcquireRequest): FleetAcquire | undefined {
        if (req.pool && !this.pools.has(req.pool))
            return refuse(
                "unknown-pool",
                `no pool named "${req.pool}" (known: ${[...this.pools].join(", ") || "none"})`,
            );
        for (const [k, v] of selectorOf(req)) {
            const why = this.unknownLabel(k, v, req.pool);
            if (why) return why;
        }
        return undefined;
    }

    /**
     * The refusal of a label value no member in scope has had since this process started (a typo, or a
     * value of another pool), naming the values (or labels) there are. A scope without members has none to
     * check against: its acquire answers `no-members` (503), so a pool scaled to zero is asked for, not refused.
     */
    private unknownLabel(key: string, value: string, pool: string | undefined): FleetAcquire | undefined {
        const keys = this.labels.get(pool ?? "*");
        if (!keys) return undefined;
        const values = keys.get(key);
        if (values?.has(value)) return undefined;
        const where = pool ? `pool "${pool}"` : "any pool";
        const list = (s: Iterable<string>) => [...s].sort().join(", ") || "none";
        // `zone` keeps its own code and words: the zone field and `_zone_` came first.
        if (key === "zone")
            return refuse(
                "unknown-zone",
                `no member of ${where} is or was in zone "${value}" (zones: ${list(values ?? [])})`,
            );
        if (!values)
            return refuse(
                "unknown-label",
                `no member of ${where} has or had label "${key}" (labels: ${list(keys.keys())})`,
            );
        return refuse(
            "unknown-label",
            `no member of ${where} has or had label ${key} "${value}" (${key} values: ${list(values)})`,
        );
    }
}

function refuse(reason: "unknown-pool" | "unknown-zone" | "unknown-label", message: string): FleetAcquire {
    return { ok: false, reason, message, retryAfterSeconds: 0 };
}

/** Each member's labels (memberLabels): its pool's `labels` from the config, its kind's over them, its zone. */
export function labelsOf(
    members: readonly ProxyMember[],
    pools: readonly PoolConfig[],
): Map<string, Record<string, string>> {
    const byPool = new Map(pools.map((p) => [p.name, p.labels]));
    return new Map(
        members.map((m) => [m.id, memberLabels({ zone: m.zone, labels: { ...byPool.get(m.pool), ...m.labels } })]),
    );
}
