/**
 * The pools and zones an acquire may name, and the refusal of one that names neither a configured pool
 * nor a zone its scope has had (Fleet.acquire answers it before asking the lease store). Separate from
 * fleet.ts because this is its own memory with its own rule: zones are remembered after their last
 * member goes, pools are exactly the last sync's.
 */
import type { PoolConfig, ProxyMember } from "../../model";
import type { AcquireRequest } from "../leases/types";
import type { FleetAcquire } from "./views";

export class KnownScopes {
    private pools = new Set<string>();
    /**
     * Zones members had, per pool and ("*") for all, since this process started: grown on every sync for
     * zone-scoped acquires. Remembered after a zone's last member goes, so a request for it is a 503 (the
     * zone is empty now; a scale-up or repair may bring one back), not a 400 calling a real zone a typo.
     */
    private zones = new Map<string, Set<string>>();

    /** Takes the pools and members of a sync (Fleet.sync). */
    sync(members: readonly ProxyMember[], pools: readonly PoolConfig[]): void {
        this.pools = new Set(pools.map((p) => p.name));
        if (!this.zones.has("*")) this.zones.set("*", new Set<string>());
        for (const m of members) {
            this.zones.get("*")!.add(m.zone);
            if (!this.zones.has(m.pool)) this.zones.set(m.pool, new Set());
            this.zones.get(m.pool)!.add(m.zone);
        }
    }

    /** Whether `pool` is configured. */
    has(pool: string): boolean {
        return this.pools.has(pool);
    }

    /** The refusal of a request naming an unknown pool or zone; undefined when both are known (or unnamed). */
    refusal(req: AcquireRequest): FleetAcquire | undefined {
        if (req.pool && !this.pools.has(req.pool))
            return {
                ok: false,
                reason: "unknown-pool",
                message: `no pool named "${req.pool}" (known: ${[...this.pools].join(", ") || "none"})`,
                retryAfterSeconds: 0,
            };
        return req.zone === undefined ? undefined : this.unknownZone(req.zone, req.pool);
    }

    /**
     * The refusal of a zone no member in scope has had since this process started (a typo, or a zone of
     * another pool), naming the zones there are. A scope without members has no zones to check against: its acquire answers `no-members`
     * (503), so a pool scaled to zero is asked for, not refused.
     */
    private unknownZone(zone: string, pool: string | undefined): FleetAcquire | undefined {
        const zones = this.zones.get(pool ?? "*");
        if (!zones || zones.size === 0 || zones.has(zone)) return undefined;
        const where = pool ? `pool "${pool}"` : "any pool";
        return {
            ok: false,
            reason: "unknown-zone",
            message: `no member of ${where} is or was in zone "${zone}" (zones: ${[...zones].sort().join(", ")})`,
            retryAfterSeconds: 0,
        };
    }
}
