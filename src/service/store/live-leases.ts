import type { Lease } from "../leases/types";

/**
 * A replica's copy of the live leases in Redis, re-read every second by the store, for the synchronous
 * reads (discovery's `leased`, the drainer, the dashboard). The decisions never read it: they run in
 * Redis. Leases this replica grants or releases are added or dropped at once.
 */
export class LiveLeases {
    private leases = new Map<string, Lease>();
    private byMember = new Map<string, string>();

    /** Replaces the copy with the rows of the VIEW script: id, proxy, pool, target, session, leasedAt, expiresAt. */
    replace(rows: string[][]): void {
        const leases = new Map<string, Lease>();
        for (const [id, proxyId, pool, target, session, leasedAt, expiresAt] of rows)
            leases.set(id, {
                id,
                proxyId,
                pool,
                ...(target !== "" && { target }),
                ...(session !== "" && { session }),
                leasedAt: Number(leasedAt),
                expiresAt: Number(expiresAt),
            });
        this.leases = leases;
        this.byMember = new Map([...leases.values()].map((l) => [l.proxyId, l.id]));
    }

    remember(l: Lease): void {
        this.leases.set(l.id, l);
        this.byMember.set(l.proxyId, l.id);
    }

    forget(leaseId: string): void {
        const l = this.leases.get(leaseId);
        this.leases.delete(leaseId);
        if (l && this.byMember.get(l.proxyId) === leaseId) this.byMember.delete(l.proxyId);
    }

    ofMember(proxyId: string): Lease | undefined {
        const id = this.byMember.get(proxyId);
        return id === undefined ? undefined : this.leases.get(id);
    }

    all(): Lease[] {
        return [...this.leases.values()].sort((a, b) => a.leasedAt - b.leasedAt);
    }
}
