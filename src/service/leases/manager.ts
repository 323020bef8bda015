import { ResolvedOptions, resolveOptions } from "./options";
import { inUse, MemberRec, newMember, newPool, place, PoolRec, promote, rebuild, unplace } from "./pool";
import { LeaseLedger } from "./lease-ledger";
import { pickLeastRecentlyUsed, sessionSticks } from "./pick";
import { memberConcurrencyOf, orLeastLoaded } from "./shared";
import { SitePoliteness, targetBusy } from "./politeness";
import { orderRules } from "../../model/politeness";
import { sessionKey } from "./sessions";
import { snapshotOf, statsOf } from "./snapshot";
import { TargetCooldowns } from "./target-cooldowns";
import {
    AcquireRequest,
    AcquireResult,
    Lease,
    LeaseManagerOptions,
    LeaseMemberInput,
    memberLabels,
    MemberSnapshot,
    PoolLeaseSettings,
    PoolStats,
    ReleaseOutcome,
    ReleaseResult,
    Removal,
} from "./types";
import { unavailable } from "./unavailable";

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
 * - A sticky session (`session`) adds O(1): two map lookups, and the bound member is taken directly.
 * - setMembers: O(n) plus O(n log n) for pools whose cooldown changed.
 * - snapshot/stats/sweep: O(n + entries + sessions).
 * Expiry is lazy (every public call ends the leases whose TTL ran out first); `sweep()` also prunes
 * forgotten target cooldowns, tombstones and idle sessions — call it every few seconds.
 */
export class LeaseManager {
    private readonly o: ResolvedOptions;
    private readonly members = new Map<string, MemberRec>();
    private readonly pools = new Map<string, PoolRec>();
    /** The live leases, their sessions and tombstones (lease-ledger.ts). */
    private readonly ledger: LeaseLedger;
    /** Health verdicts that arrived before the member did. */
    private readonly hints = new Map<string, boolean>();
    private readonly targets: TargetCooldowns;
    private readonly polite: SitePoliteness;
    private seq = 0;

    constructor(options: LeaseManagerOptions = {}) {
        this.o = resolveOptions(options);
        this.targets = new TargetCooldowns({
            targetCooldownMs: this.o.targetCooldownSeconds * 1000,
            blockedBaseMs: this.o.blockedBaseSeconds * 1000,
            blockedMaxMs: this.o.blockedMaxSeconds * 1000,
        });
        this.polite = new SitePoliteness(this.o.busyRetryAfterSeconds * 1000);
        this.ledger = new LeaseLedger(this.o, this.targets, this.polite);
    }

    /**
     * Replaces the member set (call it whenever the stack output `proxies` changes). Survivors keep their
     * leases and history; a member that disappears while leased loses its lease (a later release gets
     * `expired`/`member-removed`). Pools listed in `pools` but without members answer `no-members`.
     */
    setMembers(members: readonly LeaseMemberInput[], pools: Record<string, PoolLeaseSettings>): void {
        const now = this.o.now();
        this.ledger.expire(now);
        for (const p of this.pools.values()) p.configured = false;
        for (const [name, cfg] of Object.entries(pools)) {
            const p = this.pool(name);
            p.configured = true;
            p.sessionTtlMs = Math.max(0, cfg.sessionTtlSeconds ?? this.o.sessionTtlSeconds) * 1000;
            p.restAfterOkMs = cfg.restAfterOkSeconds === undefined ? undefined : cfg.restAfterOkSeconds * 1000;
            p.polite.rules = orderRules(cfg.targets ?? []); // in-flight counts carry over: those leases still run
            p.memberConcurrency = memberConcurrencyOf(cfg);
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
                rec = newMember(
                    m.id,
                    this.pool(m.pool),
                    this.seq++,
                    this.hints.get(m.id) ?? this.o.initiallyEligible,
                    m.zone ?? "",
                );
                this.members.set(m.id, rec);
                rec.pool.members++;
                place(rec, now);
            }
            rec.zone = m.zone ?? "";
            rec.labels = memberLabels(m);
            if (m.eligible !== undefined) this.setEligible(m.id, m.eligible);
        }
        this.hints.clear();
        // A changed memberConcurrency moves members carrying shared leases into or out of `sharing`.
        for (const rec of this.members.values()) if (rec.shared.size > 0) place(rec, now);
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

    /**
     * Leases the least recently used member that is eligible, unleased and rested (see class doc) — or,
     * for a sticky session, the member the session is bound to while it can take the lease.
     */
    acquire(req: AcquireRequest = {}): AcquireResult {
        if (!req.replaces) return this.pick(req);
        const ended = this.release(req.replaces.leaseId, req.replaces.outcome);
        const r = this.pick(req);
        return ended.ok ? { ...r, replaced: ended.lease } : r;
    }

    private pick(req: AcquireRequest): AcquireResult {
        const now = this.o.now();
        this.ledger.expire(now);
        const key = req.session === undefined ? undefined : sessionKey(req.pool, req.session);
        const session = key === undefined ? undefined : this.ledger.sessions.get(key, now);
        if (session) {
            const m = this.members.get(session.memberId);
            // `rotate`: the session's member sits this pick out, as a gateway retry's failed one does.
            if (req.rotate) req = { ...req, exclude: [...(req.exclude ?? []), session.memberId] };
            else if (m && sessionSticks(m, req, this.targets, this.polite, now))
                return { ok: true, lease: this.ledger.grant(m, req, now, key, session), rebound: false };
            else if (req.strict) return strictRefusal(m, session.memberId, this.o.busyRetryAfterSeconds);
        }
        const scope = this.scope(req.pool);
        const idle = pickLeastRecentlyUsed(scope, req.target, this.targets, now, this.polite, req);
        const { best, total, skippedUntil, held } =
            req.shared && !idle.best ? orLeastLoaded(idle, scope, req, this.targets, now, this.polite) : idle;
        if (!best && held) return targetBusy(held, now);
        if (!best) return unavailable(scope, total, req, skippedUntil, now, this.o, this.targets);
        const lease = this.ledger.grant(best, req, now, key, session);
        return key === undefined ? { ok: true, lease } : { ok: true, lease, rebound: session !== undefined };
    }

    /** Ends a lease; `blocked` lengthens the target cooldown, `error` counts against the member (onError). */
    release(leaseId: string, outcome: ReleaseOutcome): ReleaseResult {
        const now = this.o.now();
        this.ledger.expire(now);
        const rec = this.ledger.leases.get(leaseId);
        if (!rec) return this.ledger.tombstones.answer(leaseId);
        this.ledger.end(rec, "released", outcome, now);
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
        this.ledger.expire(now);
        const m = this.members.get(id);
        const recs = m ? [...(m.lease ? [m.lease] : []), ...m.shared] : [];
        for (const rec of recs) this.ledger.end(rec, "member-removed", "ok", now, removal);
        if (m) place(m, now);
        return recs[0]?.lease;
    }

    /** The active lease with this id, if any. */
    get(leaseId: string): Lease | undefined {
        this.ledger.expire(this.o.now());
        return this.ledger.leases.get(leaseId)?.lease;
    }

    /** Ends expired leases, promotes rested members, prunes old target cooldowns, tombstones and idle sessions. */
    sweep(): { expired: number; sessionsDropped: number } {
        const now = this.o.now();
        const expired = this.ledger.expire(now);
        for (const p of this.pools.values()) promote(p, now);
        this.targets.prune(now);
        this.polite.prune(now);
        this.ledger.tombstones.prune(now);
        return { expired, sessionsDropped: this.ledger.sessions.prune(now) };
    }

    /** The live leases (expired ones end first), oldest first: for the dashboard's list. */
    active(): Lease[] {
        this.ledger.expire(this.o.now());
        return [...this.ledger.leases.values()].map((l) => l.lease);
    }

    /** Whether a member holds a live lease (expired ones end first). O(1) apart from due expiries. */
    isLeased(id: string): boolean {
        this.ledger.expire(this.o.now());
        const m = this.members.get(id);
        return m !== undefined && inUse(m);
    }

    /** Per-member lease state, in arrival order (for discovery). */
    snapshot(): MemberSnapshot[] {
        const now = this.o.now();
        this.ledger.expire(now);
        return snapshotOf(this.members.values(), now);
    }

    /** Counts per pool, configured pools included even when empty. */
    stats(): Record<string, PoolStats> {
        return statsOf(this.pools.values(), this.snapshot());
    }

    /** Number of active leases. */
    get activeLeases(): number {
        return this.ledger.leases.size;
    }

    /** Sessions remembered (idle ones count until `sweep` or their next request drops them). */
    get sessionCount(): number {
        return this.ledger.sessions.size;
    }

    /** The member a session is bound to (undefined when unknown or expired). For discovery and tests. */
    sessionMember(session: string, pool?: string): string | undefined {
        const now = this.o.now();
        this.ledger.expire(now);
        return this.ledger.sessions.memberOf(sessionKey(pool, session), now);
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
        if (!p) this.pools.set(name, (p = newPool(name, this.o.sessionTtlSeconds * 1000)));
        return p;
    }

    private drop(m: MemberRec, now: number): void {
        if (m.lease) this.ledger.end(m.lease, "member-removed", "ok", now);
        for (const rec of [...m.shared]) this.ledger.end(rec, "member-removed", "ok", now);
        unplace(m);
        m.pool.members--;
        this.members.delete(m.id);
    }
}

/**
 * A `strict` session whose member cannot take this lease: gone (left the stack, or not eligible —
 * unhealthy, draining) is `session-gone`; only busy (full, resting for the target, another zone asked)
 * is the ordinary `none-available`, since the member may take it in a moment.
 */
function strictRefusal(m: MemberRec | undefined, member: string, busyRetrySeconds: number): AcquireResult {
    if (!m || !m.eligible) return { ok: false, reason: "session-gone", member, retryAfterSeconds: 0 };
    return { ok: false, reason: "none-available", retryAfterSeconds: Math.max(1, busyRetrySeconds) };
}
