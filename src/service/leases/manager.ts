import { randomUUID } from "node:crypto";
import { MinHeap } from "./heap";
import { LeaseRec, MemberRec, NEVER, newPool, place, PoolRec, promote, rebuild, unplace } from "./pool";
import { TargetCooldowns, TargetOutcome } from "./target-cooldowns";
import {
    AcquireRequest, AcquireResult, Lease, LEASE_DEFAULTS, LeaseManagerOptions, MemberSnapshot, PoolStats, ReleaseOutcome, ReleaseResult, Removal,
} from "./types";

/** One entry of `setMembers`: stack-output members fit as they are (extra fields are ignored). */
export interface LeaseMemberInput {
    id: string;
    pool: string;
    /** Health verdict known at the time, e.g. `monitor.get(id)?.state === "healthy"`. */
    eligible?: boolean;
}

/**
 * Who holds which proxy. In memory, synchronous, no I/O: JavaScript runs one call at a time, so however
 * many requests race, each `acquire` sees the state the previous one left and a proxy is never in two
 * leases at once.
 *
 * Complexity (n members in scope, P pools, k members skipped because they rest for the requested target):
 * - acquire: O(P + k + e·log n) — promote members whose cooldown ended (each promotion is paid once per
 *   release), then take the head of each pool's LRU list; e = leases expired lazily on this call.
 *   Failing acquires also scan the cooling heap when a target is given, to compute an exact Retry-After.
 * - release: O(log n). setEligible: O(log n), or O(n) when a member returns near the head of the list.
 * - setMembers: O(n) plus O(n log n) for pools whose cooldown changed. snapshot/stats/sweep: O(n + entries).
 * Expiry is lazy (every public call ends the leases whose TTL ran out first); `sweep()` also prunes
 * forgotten target cooldowns and tombstones — call it every few seconds.
 */
export class LeaseManager {
    private readonly o: Required<Omit<LeaseManagerOptions, "onError">> & Pick<LeaseManagerOptions, "onError">;
    private readonly members = new Map<string, MemberRec>();
    private readonly pools = new Map<string, PoolRec>();
    private readonly leases = new Map<string, LeaseRec>();
    private readonly expiry = new MinHeap<LeaseRec>((l) => l.lease.expiresAt);
    /** Ended leases by id, in end order (Map keeps insertion order, so pruning stops at the first young one). */
    private readonly tombstones = new Map<string, { cause: "ttl" | "member-removed"; endedAt: number; removal?: Removal }>();
    /** Health verdicts that arrived before the member did. */
    private readonly hints = new Map<string, boolean>();
    private readonly targets: TargetCooldowns;
    private seq = 0;

    constructor(options: LeaseManagerOptions = {}) {
        // Fields explicitly set to undefined keep their default (callers pass optional config through).
        const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
        this.o = { now: Date.now, newLeaseId: randomUUID, initiallyEligible: false, ...LEASE_DEFAULTS, ...given };
        for (const k of Object.keys(LEASE_DEFAULTS) as (keyof typeof LEASE_DEFAULTS)[]) {
            const v = this.o[k];
            if (typeof v !== "number" || !Number.isFinite(v) || v < 0)
                throw new RangeError(`LeaseManager option \`${k}\` must be a finite number ≥ 0, got ${String(v)}`);
        }
        if (this.o.maxTtlSeconds < 1) throw new RangeError("LeaseManager option `maxTtlSeconds` must be ≥ 1");
        this.targets = new TargetCooldowns({
            targetCooldownMs: this.o.targetCooldownSeconds * 1000,
            blockedBaseMs: this.o.blockedBaseSeconds * 1000,
            blockedMaxMs: this.o.blockedMaxSeconds * 1000,
        });
    }

    /**
     * Replaces the member set (call it whenever the stack output `proxies` changes). Survivors keep their
     * leases and history; a member that disappears while leased loses its lease (a later release gets
     * `expired`/`member-removed`). Pools listed in `pools` but without members answer `no-members`.
     */
    setMembers(members: readonly LeaseMemberInput[], pools: Record<string, { cooldownSeconds: number }>): void {
        const now = this.o.now();
        this.expire(now);
        for (const p of this.pools.values()) p.configured = false;
        for (const [name, cfg] of Object.entries(pools)) {
            const p = this.pool(name);
            p.configured = true;
            const cooldownMs = Math.max(0, cfg.cooldownSeconds) * 1000;
            if (cooldownMs !== p.cooldownMs) rebuild(p, cooldownMs, now);
        }
        const seen = new Set<string>();
        for (const m of members) {
            seen.add(m.id);
            let rec = this.members.get(m.id);
            if (rec && rec.pool.name !== m.pool) {
                this.drop(rec, now);
                rec = undefined;
            }
            if (!rec) {
                const pool = this.pool(m.pool);
                rec = {
                    id: m.id, pool, seq: this.seq++, eligible: this.hints.get(m.id) ?? this.o.initiallyEligible, lease: undefined, errors: 0,
                    lastUsedAt: NEVER, prev: undefined, next: undefined, inList: false, heapIndex: -1,
                };
                this.members.set(m.id, rec);
                pool.members++;
                place(rec, now);
            }
            if (m.eligible !== undefined) this.setEligible(m.id, m.eligible);
        }
        this.hints.clear();
        for (const rec of [...this.members.values()]) if (!seen.has(rec.id)) this.drop(rec, now);
        for (const p of this.pools.values()) if (p.members === 0 && !p.configured) this.pools.delete(p.name);
    }

    /** Health verdict: ineligible members are never leased (a current lease runs on). False if unknown id. */
    setEligible(id: string, eligible: boolean): boolean {
        const rec = this.members.get(id);
        if (!rec) {
            this.hints.set(id, eligible);
            return false;
        }
        if (rec.eligible === eligible) return true;
        rec.eligible = eligible;
        if (eligible) place(rec, this.o.now());
        else unplace(rec);
        return true;
    }

    /** Leases the least recently used member that is eligible, unleased and rested (see class doc). */
    acquire(req: AcquireRequest = {}): AcquireResult {
        const now = this.o.now();
        this.expire(now);
        const scope = this.scope(req.pool);
        const target = req.target;
        let best: MemberRec | undefined;
        let total = 0;
        let skippedUntil = Infinity;
        for (const pool of scope) {
            total += pool.members;
            promote(pool, now);
            for (let m = pool.ready.first(); m; m = pool.ready.after(m)) {
                if (target !== undefined) {
                    const until = this.targets.until(target, m.id);
                    if (until > now) {
                        skippedUntil = Math.min(skippedUntil, until);
                        continue;
                    }
                }
                if (!best || m.lastUsedAt < best.lastUsedAt || (m.lastUsedAt === best.lastUsedAt && m.seq < best.seq)) best = m;
                break;
            }
        }
        if (!best) return this.unavailable(scope, total, target, skippedUntil, now);
        const ttl = Math.min(this.o.maxTtlSeconds, Math.max(1, Math.floor(req.ttlSeconds ?? this.o.defaultTtlSeconds)));
        const lease: Lease = target === undefined
            ? { id: this.o.newLeaseId(), proxyId: best.id, pool: best.pool.name, leasedAt: now, expiresAt: now + ttl * 1000 }
            : { id: this.o.newLeaseId(), proxyId: best.id, pool: best.pool.name, target, leasedAt: now, expiresAt: now + ttl * 1000 };
        best.pool.ready.remove(best);
        const rec: LeaseRec = { lease, member: best, heapIndex: -1 };
        best.lease = rec;
        best.pool.leased++;
        this.leases.set(lease.id, rec);
        this.expiry.push(rec);
        return { ok: true, lease };
    }

    /** Ends a lease; `blocked` lengthens the target cooldown, `error` counts against the member (onError). */
    release(leaseId: string, outcome: ReleaseOutcome): ReleaseResult {
        const now = this.o.now();
        this.expire(now);
        const rec = this.leases.get(leaseId);
        if (!rec) {
            const t = this.tombstones.get(leaseId);
            if (!t) return { ok: false, reason: "unknown-lease" };
            return t.removal ? { ok: false, reason: "expired", cause: t.cause, endedAt: t.endedAt, removal: t.removal } : { ok: false, reason: "expired", cause: t.cause, endedAt: t.endedAt };
        }
        this.end(rec, "released", outcome, now);
        // After the state is consistent, so a throwing callback cannot leave a half-released lease.
        if (outcome === "error") this.o.onError?.(rec.member.id, rec.lease);
        return { ok: true, lease: rec.lease, errors: rec.member.errors };
    }

    /**
     * Ends the lease on member `id` because the service is taking the member away (a drain ran out, a
     * repair of a gone member): a later release gets `expired` with `removal`. The member stays; whoever
     * revokes keeps it ineligible while it should not be leased. Returns the ended lease, if there was one.
     */
    revoke(id: string, removal: Removal): Lease | undefined {
        const now = this.o.now();
        this.expire(now);
        const rec = this.members.get(id)?.lease;
        if (!rec) return undefined;
        this.end(rec, "member-removed", "ok", now, removal);
        place(rec.member, now);
        return rec.lease;
    }

    /** The active lease with this id, if any. */
    get(leaseId: string): Lease | undefined {
        this.expire(this.o.now());
        return this.leases.get(leaseId)?.lease;
    }

    /** Ends expired leases, promotes rested members, prunes old target cooldowns and tombstones. */
    sweep(): { expired: number } {
        const now = this.o.now();
        const expired = this.expire(now);
        for (const p of this.pools.values()) promote(p, now);
        this.targets.prune(now);
        const cutoff = now - this.o.tombstoneSeconds * 1000;
        for (const [id, t] of this.tombstones) {
            if (t.endedAt > cutoff) break;
            this.tombstones.delete(id);
        }
        return { expired };
    }

    /** The live leases (expired ones end first), oldest first: for the dashboard's list. */
    active(): Lease[] {
        this.expire(this.o.now());
        return [...this.leases.values()].map((l) => l.lease);
    }

    /** Whether a member holds a live lease (expired ones end first). O(1) apart from due expiries. */
    isLeased(id: string): boolean {
        this.expire(this.o.now());
        return this.members.get(id)?.lease !== undefined;
    }

    /** Per-member lease state, in arrival order (for discovery). */
    snapshot(): MemberSnapshot[] {
        const now = this.o.now();
        this.expire(now);
        const out: MemberSnapshot[] = [];
        for (const m of this.members.values()) {
            const availableAt = m.lastUsedAt + m.pool.cooldownMs;
            const s: MemberSnapshot = {
                id: m.id, pool: m.pool.name, eligible: m.eligible, errors: m.errors,
                state: m.lease ? "leased" : !m.eligible ? "ineligible" : availableAt > now ? "cooldown" : "available",
            };
            if (m.lastUsedAt !== NEVER) s.lastUsedAt = m.lastUsedAt;
            if (m.lease) s.leaseId = m.lease.lease.id;
            if (s.state === "cooldown") s.availableAt = availableAt;
            out.push(s);
        }
        return out;
    }

    /** Counts per pool, configured pools included even when empty. */
    stats(): Record<string, PoolStats> {
        const out: Record<string, PoolStats> = {};
        for (const p of this.pools.values()) out[p.name] = { members: 0, available: 0, leased: 0, cooldown: 0, ineligible: 0 };
        for (const s of this.snapshot()) {
            const p = out[s.pool];
            p.members++;
            p[s.state]++;
        }
        return out;
    }

    /** Number of active leases. */
    get activeLeases(): number {
        return this.leases.size;
    }

    /** Rest-until time of a (target, proxy) pair; 0 when it may be used now. For discovery and tests. */
    targetCooldownUntil(target: string, proxyId: string): number {
        return this.targets.until(target, proxyId);
    }

    /**
     * A block reported after the lease ended (the gateway's CONNECT tunnels cannot see the origin's
     * answer; the client reports it: POST /v1/blocks): `proxyId` rests for `target` as after a `blocked`
     * release. Returns the rest-until time, or undefined for an unknown member.
     */
    reportBlocked(proxyId: string, target: string): number | undefined {
        if (!this.members.has(proxyId)) return undefined;
        return this.targets.record(target, proxyId, "blocked", this.o.now());
    }

    private scope(pool: string | undefined): PoolRec[] {
        if (pool === undefined) return [...this.pools.values()];
        const p = this.pools.get(pool);
        return p ? [p] : [];
    }

    private pool(name: string): PoolRec {
        let p = this.pools.get(name);
        if (!p) this.pools.set(name, (p = newPool(name)));
        return p;
    }

    private drop(m: MemberRec, now: number): void {
        if (m.lease) this.end(m.lease, "member-removed", "ok", now);
        unplace(m);
        m.pool.members--;
        this.members.delete(m.id);
    }

    private expire(now: number): number {
        let n = 0;
        for (let top = this.expiry.peek(); top && top.lease.expiresAt <= now; top = this.expiry.peek()) {
            this.end(top, "ttl", "ok", now);
            n++;
        }
        return n;
    }

    private end(rec: LeaseRec, cause: "released" | "ttl" | "member-removed", outcome: ReleaseOutcome, now: number, removal?: Removal): void {
        const m = rec.member;
        // An expired lease ended at its expiresAt, however late we notice: cooldowns and LRU order do not
        // depend on when a sweep or a request happened to come by.
        const at = cause === "ttl" ? rec.lease.expiresAt : now;
        this.leases.delete(rec.lease.id);
        this.expiry.remove(rec);
        m.lease = undefined;
        m.pool.leased--;
        if (cause !== "released") {
            this.tombstones.set(rec.lease.id, removal ? { cause, endedAt: at, removal } : { cause, endedAt: at });
            if (this.tombstones.size > this.o.maxTombstones) this.tombstones.delete(this.tombstones.keys().next().value!);
        }
        if (cause === "member-removed") return;
        m.lastUsedAt = at;
        const target = rec.lease.target;
        if (target !== undefined) this.targets.record(target, m.id, cause === "ttl" ? "expired" : (outcome as TargetOutcome), at);
        if (outcome === "error") m.errors++;
        place(m, now);
    }

    /** Failure result with the earliest moment something in scope could be leased. */
    private unavailable(scope: PoolRec[], total: number, target: string | undefined, skippedUntil: number, now: number): AcquireResult {
        if (total === 0) return { ok: false, reason: "no-members", retryAfterSeconds: Math.max(1, this.o.idleRetryAfterSeconds) };
        let earliest = skippedUntil;
        for (const p of scope) {
            // A leased member may come back any moment; it then serves its pool cooldown first.
            if (p.leased > 0) earliest = Math.min(earliest, now + Math.max(this.o.busyRetryAfterSeconds * 1000, p.cooldownMs));
            if (target === undefined) {
                const top = p.cooling.peek();
                if (top) earliest = Math.min(earliest, top.lastUsedAt + p.cooldownMs);
            } else {
                for (const m of p.cooling.values()) earliest = Math.min(earliest, Math.max(m.lastUsedAt + p.cooldownMs, this.targets.until(target, m.id)));
            }
        }
        const seconds = earliest === Infinity ? this.o.idleRetryAfterSeconds : Math.ceil((earliest - now) / 1000);
        return { ok: false, reason: "none-available", retryAfterSeconds: Math.max(1, seconds) };
    }
}
