/**
 * The brute-force reference model of the lease rules, and the random walk that holds a lease store to it
 * (test/unit/leases-property.test.ts: the memory manager; test/service/leases-property-redis.test.ts: the
 * Redis store's Lua on a real redis-server). Interleaved acquire / release / clock / health / membership
 * operations; every lease must go to the member a full scan picks (LRU among eligible, unleased, rested
 * members), no proxy is ever in two live leases, refusals carry the reason and Retry-After the model
 * computes, and every release gets the answer the model expects.
 * A third of the acquires name a sticky session: it gets its bound member while that member is present,
 * eligible (healthy, not draining), unleased and not blocked for the target, else the LRU pick with
 * `rebound: true`; a session idle for its pool's TTL is forgotten (a new one, `rebound: false`).
 */
import assert from "node:assert/strict";
import type { AcquireRequest, AcquireResult, ReleaseOutcome, ReleaseResult } from "../../src/service/leases";
import type { LeaseMemberInput, PoolLeaseSettings } from "../../src/service/leases";

/** The store under test, as the walk drives it. Every call may answer now or later. */
export interface LeaseSubject {
    /** The time the store reads from now on (epoch ms). */
    setNow(ms: number): Promise<void> | void;
    /** `members`: a member new to the model comes with `eligible: true`, one it knows without. */
    setMembers(members: LeaseMemberInput[], pools: Record<string, PoolLeaseSettings>): Promise<void> | void;
    setEligible(id: string, eligible: boolean): Promise<void> | void;
    acquire(req: AcquireRequest): Promise<AcquireResult> | AcquireResult;
    release(id: string, outcome: ReleaseOutcome): Promise<ReleaseResult> | ReleaseResult;
    sweep(): Promise<void> | void;
    /** The ids of the live leases whose TTL has not run out at `now`. */
    liveLeaseIds(now: number): Promise<string[]> | string[];
    /** Each member's eligibility as the store holds it; a member it cannot tell (leased) is absent. */
    eligibility(): Promise<Map<string, boolean>> | Map<string, boolean>;
    /** The member `session` (in `pool`, or any pool) is bound to. */
    sessionMember(session: string, pool: string | undefined): Promise<string | undefined> | string | undefined;
}

export interface ModelSettings {
    /** Seconds an idle session is kept, per pool; pool `c` leaves it to the store's own option. */
    sessionTtl: { a: number; b: number; c: number };
    /**
     * Among members released at the same moment (or never leased), which comes first: the memory manager
     * takes them in the order they joined, the Redis store by id (its sorted sets' order).
     */
    ties: "joined" | "id";
}

/** The store's options the walk assumes: the rest after ok/error for a target, and pool `c`'s session TTL. */
export const MODEL_TARGET_COOLDOWN_SECONDS = 30;

/** mulberry32: small, seedable, good enough to shuffle operations. */
function rng(seed: number): () => number {
    let a = seed >>> 0;
    return () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}

interface M {
    id: string;
    pool: string;
    seq: number;
    eligible: boolean;
    lastUsedAt: number;
    present: boolean;
    errors: number;
}
interface S {
    key: string;
    memberId: string;
    touchedAt: number;
    live: number;
    ttlMs: number;
}
interface L {
    id: string;
    proxyId: string;
    expiresAt: number;
    target?: string;
    session?: S;
    state: "live" | "released" | "ttl" | "member-removed";
    endedAt?: number;
}

/** Where the walk starts: a recent instant, so keys the Redis store expires on its own clock are not in its past. */
export const MODEL_EPOCH = 1_800_000_000_000;

/** The model's state: what the store must hold after every step, and the rules that derive its answers. */
class Model {
    now = MODEL_EPOCH;
    seq = 0;
    readonly cooldown: Record<string, number> = { a: 0, b: 2, c: 7 };
    readonly members = new Map<string, M>();
    readonly leases = new Map<string, L>();
    readonly tcd = new Map<string, { until: number; blocks: number }>();
    readonly sessions = new Map<string, S>();

    constructor(readonly s: ModelSettings) {}

    poolsCfg(): Record<string, PoolLeaseSettings> {
        const ttl = this.s.sessionTtl as Record<string, number>;
        return Object.fromEntries(
            Object.entries(this.cooldown).map(([k, v]) => [
                k,
                k === "c" ? { cooldownSeconds: v } : { cooldownSeconds: v, sessionTtlSeconds: ttl[k] },
            ]),
        );
    }
    /** Applies a membership change to the model; returns what the store is told. */
    apply(list: { id: string; pool: string }[]): LeaseMemberInput[] {
        const input = list.map((x) => (this.members.get(x.id)?.present ? x : { ...x, eligible: true }));
        for (const x of list)
            if (!this.members.get(x.id)?.present)
                this.members.set(x.id, {
                    ...x,
                    seq: this.seq++,
                    eligible: true,
                    lastUsedAt: -Infinity,
                    present: true,
                    errors: 0,
                });
        const keep = new Set(list.map((x) => x.id));
        for (const m of this.members.values())
            if (m.present && !keep.has(m.id)) {
                m.present = false;
                for (const l of this.leases.values())
                    if (l.state === "live" && l.proxyId === m.id) {
                        Object.assign(l, { state: "member-removed", endedAt: this.now });
                        this.endSession(l, this.now);
                    }
            }
        return input;
    }
    recordTarget(target: string, id: string, outcome: ReleaseOutcome | "expired", at: number): void {
        const k = `${target}|${id}`;
        const e = this.tcd.get(k) ?? { until: 0, blocks: 0 };
        if (outcome === "blocked") {
            e.blocks++;
            e.until = at + Math.min(3_600_000, 60_000 * 2 ** (e.blocks - 1));
        } else {
            if (outcome !== "error") e.blocks = 0;
            e.until = Math.max(e.until, at + MODEL_TARGET_COOLDOWN_SECONDS * 1000);
        }
        this.tcd.set(k, e);
    }
    endSession(l: L, at: number): void {
        if (!l.session) return;
        l.session.live--;
        l.session.touchedAt = Math.max(l.session.touchedAt, at);
    }
    sessionOf(key: string): S | undefined {
        const x = this.sessions.get(key);
        if (x && x.live === 0 && this.now >= x.touchedAt + x.ttlMs) this.sessions.delete(key);
        return this.sessions.get(key);
    }
    blocked(target: string | undefined, id: string): boolean {
        const e = target === undefined ? undefined : this.tcd.get(`${target}|${id}`);
        return !!e && e.blocks > 0 && e.until > this.now;
    }
    endLive(l: L, state: "released" | "ttl", outcome: ReleaseOutcome | "expired", at: number): void {
        Object.assign(l, { state, endedAt: at });
        this.endSession(l, at);
        const m = this.members.get(l.proxyId)!;
        m.lastUsedAt = at;
        if (l.target !== undefined) this.recordTarget(l.target, m.id, outcome, at);
    }
    expire(): void {
        for (const l of this.leases.values())
            if (l.state === "live" && l.expiresAt <= this.now) this.endLive(l, "ttl", "expired", l.expiresAt);
    }
    liveHolder(id: string): L | undefined {
        return [...this.leases.values()].find((l) => l.state === "live" && l.proxyId === id);
    }
    tUntil(target: string | undefined, id: string): number {
        return target === undefined ? 0 : (this.tcd.get(`${target}|${id}`)?.until ?? 0);
    }
    /** LRU first; ties as the store under test breaks them. */
    order(x: M, y: M): number {
        const tie = this.s.ties === "joined" ? x.seq - y.seq : x.id < y.id ? -1 : x.id > y.id ? 1 : 0;
        return x.lastUsedAt - y.lastUsedAt || tie;
    }
}

/** What one walk exercised, so a test can tell the mix reached contention and both session branches. */
export interface WalkCounts {
    granted: number;
    sessionsUsed: number;
    stuck: number;
}

/** Every member the walk knows: 12 per pool, ids that sort in the order they join. */
const ALL = ["a", "b", "c"].flatMap((p) =>
    Array.from({ length: 12 }, (_, i) => ({ id: `${p}-${String(i).padStart(2, "0")}`, pool: p })),
);

/** Runs `ops` random operations from `seed` against `store`, checking each answer against the model. */
export async function walkLeases(
    store: LeaseSubject,
    seed: number,
    ops: number,
    s: ModelSettings,
): Promise<WalkCounts> {
    const r = rng(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
    const m = new Model(s);
    const counts: WalkCounts = { granted: 0, sessionsUsed: 0, stuck: 0 };
    await store.setNow(m.now);
    await store.setMembers(m.apply(ALL), m.poolsCfg());
    for (let step = 0; step < ops; step++) {
        const op = r();
        m.expire();
        const ctx = `seed ${seed} step ${step}`;
        if (op < 0.42) await acquireStep(store, m, r, pick, ctx, counts);
        else if (op < 0.72) await releaseStep(store, m, r, pick, ctx);
        else if (op < 0.9) {
            m.now += Math.floor(r() * (r() < 0.05 ? 120_000 : 3_000));
            await store.setNow(m.now);
        } else if (op < 0.96) {
            const x = pick([...m.members.values()].filter((y) => y.present));
            if (x) {
                x.eligible = r() < 0.6;
                await store.setEligible(x.id, x.eligible);
            }
        } else if (op < 0.99) {
            if (r() < 0.3) m.cooldown[pick(["a", "b", "c"])] = pick([0, 1, 5, 10]);
            // Members that came back are new to the store: eligible again.
            await store.setMembers(m.apply(ALL.filter(() => r() < 0.9)), m.poolsCfg());
        } else {
            await store.sweep();
            for (const [k, e] of m.tcd) if ((e.blocks > 0 ? e.until + 3_600_000 : e.until) <= m.now) m.tcd.delete(k);
        }
        if (step % 250 === 0) await checkState(store, m, ctx);
    }
    return counts;
}

type Rand = () => number;
type Pick = <T>(xs: readonly T[]) => T;

async function acquireStep(
    store: LeaseSubject,
    m: Model,
    r: Rand,
    pick: Pick,
    ctx: string,
    n: WalkCounts,
): Promise<void> {
    const pool = r() < 0.5 ? pick(["a", "b", "c", "zz"]) : undefined;
    const target = pick(["t1", "t2", "t3", undefined]);
    const ttl = r() < 0.3 ? undefined : 1 + Math.floor(r() * 20);
    const session = r() < 0.33 ? pick(["s1", "s2", "s3", "s4", "s5", "s6"]) : undefined;
    const key = session === undefined ? undefined : `${pool ?? "*"}|${session}`;
    const bound = key === undefined ? undefined : m.sessionOf(key);
    const scope = [...m.members.values()].filter((x) => x.present && (pool === undefined || x.pool === pool));
    const idle = scope.filter((x) => x.eligible && !m.liveHolder(x.id));
    const ready = idle
        .filter((x) => x.lastUsedAt + m.cooldown[x.pool] * 1000 <= m.now && m.tUntil(target, x.id) <= m.now)
        .sort((x, y) => m.order(x, y));
    // The session's member skips the pool cooldown and plain target rests, not a block.
    const stuck = bound && idle.find((x) => x.id === bound.memberId && !m.blocked(target, x.id));
    const want = stuck || ready[0];
    const res = await store.acquire({ pool, target, ttlSeconds: ttl, session });
    if (!want) return refusalStep(m, res, scope, idle, target, ctx);
    assert.ok(res.ok, `${ctx}: expected ${want.id}, got ${JSON.stringify(res)}`);
    assert.equal(res.lease.proxyId, want.id, ctx);
    assert.equal(m.liveHolder(res.lease.proxyId), undefined, `${ctx}: double lease of ${res.lease.proxyId}`);
    assert.ok(m.members.get(res.lease.proxyId)!.eligible, `${ctx}: ineligible ${res.lease.proxyId} leased`);
    assert.equal(res.lease.expiresAt, m.now + Math.min(3600, Math.max(1, ttl ?? 300)) * 1000, ctx);
    assert.equal(res.lease.session, session, ctx);
    assert.equal(res.rebound, key === undefined ? undefined : !stuck && bound !== undefined, ctx);
    let sess: S | undefined;
    if (key !== undefined) {
        const ttlOf = m.s.sessionTtl as Record<string, number>;
        sess = bound ?? { key, memberId: want.id, touchedAt: m.now, live: 0, ttlMs: 0 };
        Object.assign(sess, { memberId: want.id, touchedAt: m.now, ttlMs: ttlOf[want.pool] * 1000 });
        sess.live++;
        m.sessions.set(key, sess);
        n.sessionsUsed++;
        if (stuck) n.stuck++;
    }
    const l = res.lease;
    m.leases.set(l.id, { id: l.id, proxyId: l.proxyId, expiresAt: l.expiresAt, target, session: sess, state: "live" });
    n.granted++;
}

/** No member to give: no-members for an empty scope, else none-available with the earliest moment one frees. */
function refusalStep(
    m: Model,
    res: AcquireResult,
    scope: M[],
    idle: M[],
    target: string | undefined,
    ctx: string,
): void {
    if (scope.length === 0) {
        assert.deepEqual(res, { ok: false, reason: "no-members", retryAfterSeconds: 30 }, ctx);
        return;
    }
    let earliest = Infinity;
    for (const x of idle)
        earliest = Math.min(earliest, Math.max(x.lastUsedAt + m.cooldown[x.pool] * 1000, m.tUntil(target, x.id)));
    for (const p of new Set(scope.map((x) => x.pool)))
        if (scope.some((x) => x.pool === p && m.liveHolder(x.id)))
            earliest = Math.min(earliest, m.now + Math.max(1000, m.cooldown[p] * 1000));
    const want = earliest === Infinity ? 30 : Math.max(1, Math.ceil((earliest - m.now) / 1000));
    assert.deepEqual(res, { ok: false, reason: "none-available", retryAfterSeconds: want }, ctx);
}

async function releaseStep(store: LeaseSubject, m: Model, r: Rand, pick: Pick, ctx: string): Promise<void> {
    const known = [...m.leases.values()];
    const l = r() < 0.9 && known.length ? pick(known.slice(-40)) : { id: "nope", state: "unknown" as const };
    const outcome = pick(["ok", "ok", "ok", "blocked", "error"] as const);
    const res = await store.release(l.id, outcome);
    if (l.state === "live") {
        const x = m.members.get((l as L).proxyId)!;
        if (outcome === "error") x.errors++;
        m.endLive(l as L, "released", outcome, m.now);
        assert.ok(res.ok, `${ctx}: ${JSON.stringify(res)}`);
        assert.equal(res.errors, x.errors, ctx);
    } else if (l.state === "ttl" || l.state === "member-removed") {
        assert.deepEqual(res, { ok: false, reason: "expired", cause: l.state, endedAt: (l as L).endedAt }, ctx);
    } else {
        assert.deepEqual(res, { ok: false, reason: "unknown-lease" }, ctx);
    }
}

/** The store's own state against the model's: live leases, eligibility, session bindings. */
async function checkState(store: LeaseSubject, m: Model, ctx: string): Promise<void> {
    const live = [...m.leases.values()].filter((l) => l.state === "live" && l.expiresAt > m.now);
    assert.deepEqual((await store.liveLeaseIds(m.now)).sort(), live.map((l) => l.id).sort(), ctx);
    for (const [id, eligible] of await store.eligibility())
        assert.equal(eligible, m.members.get(id)!.eligible, `${ctx}: eligibility of ${id}`);
    m.expire(); // the store may have ended the leases whose TTL ran out during this step
    for (const p of [undefined, "a", "b", "c", "zz"])
        for (const k of ["s1", "s2", "s3", "s4", "s5", "s6"])
            assert.equal(
                await store.sessionMember(k, p),
                m.sessionOf(`${p ?? "*"}|${k}`)?.memberId,
                `${ctx}: session ${p}/${k} ${JSON.stringify(m.sessions.get(`${p ?? "*"}|${k}`))} now ${m.now}`,
            );
}
