import { MinHeap } from "./heap";
import type { ResolvedOptions } from "./options";
import { LeaseRec, MemberRec, place, unplace } from "./pool";
import type { SitePoliteness } from "./politeness";
import { SessionRec, SessionTable } from "./sessions";
import type { TargetCooldowns, TargetOutcome } from "./target-cooldowns";
import { Tombstones } from "./tombstones";
import type { AcquireRequest, Lease, ReleaseOutcome, Removal } from "./types";

/**
 * The live leases of a LeaseManager (manager.ts) and what starting and ending one does: the manager
 * decides which member an acquire gets and when a lease ends; this grants the lease to that member and,
 * when it ends (released, TTL run out, member taken away), settles what it leaves behind — the member's
 * place in its pool's lists, the target's cooldown, the site's in-flight count, the session's idle clock
 * and the tombstone a late release is answered from. `expire` ends the leases whose TTL ran out.
 */
export class LeaseLedger {
    readonly leases = new Map<string, LeaseRec>();
    private readonly expiry = new MinHeap<LeaseRec>((l) => l.lease.expiresAt);
    readonly tombstones: Tombstones;
    readonly sessions: SessionTable;

    constructor(
        private readonly o: ResolvedOptions,
        private readonly targets: TargetCooldowns,
        private readonly polite: SitePoliteness,
    ) {
        this.tombstones = new Tombstones(this.o.tombstoneSeconds * 1000, this.o.maxTombstones);
        this.sessions = new SessionTable(this.o.maxSessions);
    }

    /** Leases `m` (chosen by acquire), binding the session `key` to it when there is one. */
    grant(
        m: MemberRec,
        req: AcquireRequest,
        now: number,
        key: string | undefined,
        session: SessionRec | undefined,
    ): Lease {
        const ttl = Math.min(this.o.maxTtlSeconds, Math.max(1, Math.floor(req.ttlSeconds ?? this.o.defaultTtlSeconds)));
        const lease: Lease = {
            id: this.o.newLeaseId(),
            proxyId: m.id,
            pool: m.pool.name,
            ...(req.target !== undefined && { target: req.target }),
            ...(req.session !== undefined && { session: req.session }),
            leasedAt: now,
            expiresAt: now + ttl * 1000,
        };
        unplace(m);
        const rec: LeaseRec = { lease, member: m, heapIndex: -1, ...(req.shared && { shared: true }) };
        rec.rule = this.polite.granted(m.pool, this.polite.rule(m.pool, req.target), m.id, now);
        if (key !== undefined)
            rec.session = this.sessions.acquired(key, session, m.id, sessionTtlMs(m.pool.sessionTtlMs, req), now);
        if (rec.shared) m.shared.add(rec);
        else m.lease = rec;
        place(m, now); // a shared lease leaves room for more: back in `sharing`
        m.pool.leased++;
        this.leases.set(lease.id, rec);
        this.expiry.push(rec);
        return lease;
    }

    /** Ends the leases whose TTL ran out by `now`; returns how many. */
    expire(now: number): number {
        let n = 0;
        for (let top = this.expiry.peek(); top && top.lease.expiresAt <= now; top = this.expiry.peek()) {
            this.end(top, "ttl", "ok", now);
            n++;
        }
        return n;
    }

    /** Ends `rec`; `removal` (member-removed only) is what a late release of it is told. */
    end(
        rec: LeaseRec,
        cause: "released" | "ttl" | "member-removed",
        outcome: ReleaseOutcome,
        now: number,
        removal?: Removal,
    ): void {
        const m = rec.member;
        // An expired lease ended at its expiresAt, however late we notice: cooldowns and LRU order do not
        // depend on when a sweep or a request happened to come by.
        const at = cause === "ttl" ? rec.lease.expiresAt : now;
        this.leases.delete(rec.lease.id);
        this.expiry.remove(rec);
        if (rec.shared) m.shared.delete(rec);
        else m.lease = undefined;
        m.pool.leased--;
        this.polite.ended(m.pool, rec.rule);
        if (rec.session) this.sessions.ended(rec.session, at);
        if (cause !== "released")
            this.tombstones.add(rec.lease.id, removal ? { cause, endedAt: at, removal } : { cause, endedAt: at });
        if (cause === "member-removed") return;
        m.lastUsedAt = at;
        const target = rec.lease.target;
        const how: TargetOutcome = cause === "ttl" ? "expired" : outcome;
        if (target !== undefined) this.targets.record(target, m.id, how, at, m.pool.restAfterOkMs);
        if (outcome === "error") m.errors++;
        place(m, now);
    }
}

/** The session's idle TTL: the request's `sessionTtlSeconds` (`_ttl_`), never longer than the pool's. */
export function sessionTtlMs(poolMs: number, req: Pick<AcquireRequest, "sessionTtlSeconds">): number {
    return req.sessionTtlSeconds === undefined ? poolMs : Math.min(poolMs, req.sessionTtlSeconds * 1000);
}
