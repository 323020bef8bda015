/**
 * The egress IPs each pool's members had lately (`ipMemorySeconds`): a rotation asks whether its
 * replacement came back with one of them (`reusedIp` in its record). The one home of that memory; the
 * rotator feeds it the IPs the health probes see, the rotation (run.ts) asks it.
 */

/** IPs remembered per pool at most: the oldest sighting goes first (bounded memory). */
export const MAX_IPS_PER_POOL = 1024;

export class IpMemory {
    /** Per pool: IP → epoch ms last seen, in insertion order refreshed on every sighting (oldest first). */
    private readonly byPool = new Map<string, Map<string, number>>();

    constructor(private readonly now: () => number = Date.now) {}

    /** The pool's members use `ip` now. */
    seen(pool: string, ip: string | undefined): void {
        if (!ip) return;
        let ips = this.byPool.get(pool);
        if (!ips) this.byPool.set(pool, (ips = new Map()));
        ips.delete(ip);
        ips.set(ip, this.now());
        if (ips.size > MAX_IPS_PER_POOL) ips.delete(ips.keys().next().value!);
    }

    /** Whether the pool's members used `ip` within the last `seconds` (0: the memory is off, never). */
    usedWithin(pool: string, ip: string | undefined, seconds: number): boolean {
        if (!ip || seconds <= 0) return false;
        const at = this.byPool.get(pool)?.get(ip);
        return at !== undefined && at >= this.now() - seconds * 1000;
    }

    /** Forgets pools no longer configured and sightings older than each pool's memory. */
    prune(memorySeconds: ReadonlyMap<string, number>): void {
        for (const [pool, ips] of this.byPool) {
            const keep = memorySeconds.get(pool);
            if (!keep) {
                this.byPool.delete(pool);
                continue;
            }
            const since = this.now() - keep * 1000;
            for (const [ip, at] of ips) if (at < since) ips.delete(ip);
        }
    }
}
