import type { Lease } from "../leases/types";

/**
 * A replica's copy of the live leases in Redis, re-read every second by the store, for the synchronous
 * reads (discovery's `leased`, the drainer, the dashboard). The decisions never read it: they run in
 * Redis. Leases this replica grants or releases are added or dropped at once.
 */
export class LiveLeases {
    private leases = new Map<string, Lease>();
    /**
     * Lease ids per member: one exclusive lease, or up to memberConcurrency shared (gateway) ones. A lone
     * id is kept as itself, a set only from the second one: every acquire and release passes here, and a
     * set per lease was one more allocation per request for the usual single lease.
     */
    private byMember = new Map<string, string | Set<string>>();

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
        this.leases = new Map();
        this.byMember = new Map();
        for (const l of leases.values()) this.remember(l);
    }

    remember(l: Lease): void {
        this.leases.set(l.id, l);
        const ids = this.byMember.get(l.proxyId);
        if (ids === undefined || ids === l.id) this.byMember.set(l.proxyId, l.id);
        else if (typeof ids === "string") this.byMember.set(l.proxyId, new Set([ids, l.id]));
        else ids.add(l.id);
    }

    forget(leaseId: string): void {
        const l = this.leases.get(leaseId);
        if (!l) return;
        this.leases.delete(leaseId);
        const ids = this.byMember.get(l.proxyId);
        if (ids === leaseId) this.byMember.delete(l.proxyId);
        else if (typeof ids === "object") {
            ids.delete(leaseId);
            if (ids.size === 0) this.byMember.delete(l.proxyId);
        }
    }

    /** Drops every lease of a member (after a revoke ended them all). */
    forgetMember(proxyId: string): void {
        const ids = this.byMember.get(proxyId);
        if (typeof ids === "string") this.leases.delete(ids);
        else for (const id of ids ?? []) this.leases.delete(id);
        this.byMember.delete(proxyId);
    }

    /** The lease `leaseId`, while this view knows it. */
    get(leaseId: string): Lease | undefined {
        return this.leases.get(leaseId);
    }

    /** One of the member's live leases (the oldest remembered), if it has any. */
    ofMember(proxyId: string): Lease | undefined {
        const ids = this.byMember.get(proxyId);
        const first = typeof ids === "string" ? ids : ids?.values().next().value;
        return first === undefined ? undefined : this.leases.get(first);
    }

    all(): Lease[] {
        return [...this.leases.values()].sort((a, b) => a.leasedAt - b.leasedAt);
    }
}
