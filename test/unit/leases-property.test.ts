/**
 * 10,000 interleaved acquire / release / clock / health / membership operations per seed, checked against
 * a brute-force reference model: every lease goes to the member a full scan would pick (LRU among
 * eligible, unleased, rested members), no proxy is ever in two live leases, refusals carry the reason and
 * Retry-After the model computes, and every release gets the answer the model expects.
 * A third of the acquires name a sticky session: it gets its bound member while that member is present,
 * eligible (healthy, not draining), unleased and not blocked for the target, else the LRU pick with
 * `rebound: true`; a session idle for its pool's TTL is forgotten (a new one, `rebound: false`).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { LeaseManager, ReleaseOutcome } from "../../src/service/leases";

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

function run(seed: number, ops: number) {
    const r = rng(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
    let now = 1_700_000_000_000;
    let seq = 0;
    let leaseNo = 0;
    const cooldown: Record<string, number> = { a: 0, b: 2, c: 7 };
    // Session TTL per pool; `c` leaves it to the manager's option (8 s).
    const sessionTtl: Record<string, number> = { a: 4, b: 15, c: 8 };
    const poolsCfg = () =>
        Object.fromEntries(
            Object.entries(cooldown).map(([k, v]) => [
                k,
                k === "c" ? { cooldownSeconds: v } : { cooldownSeconds: v, sessionTtlSeconds: sessionTtl[k] },
            ]),
        );
    const members = new Map<string, M>();
    const leases = new Map<string, L>();
    const tcd = new Map<string, { until: number; blocks: number }>();
    const sessions = new Map<string, S>();
    const mgr = new LeaseManager({
        now: () => now,
        newLeaseId: () => `L${++leaseNo}`,
        initiallyEligible: true,
        sessionTtlSeconds: 8,
        targetCooldownSeconds: 30, // the model's rest after ok/error (the default is 0)
    });

    const all = ["a", "b", "c"].flatMap((p) => Array.from({ length: 12 }, (_, i) => ({ id: `${p}-${i}`, pool: p })));
    const apply = (list: { id: string; pool: string }[]) => {
        for (const x of list)
            if (!members.get(x.id)?.present)
                members.set(x.id, {
                    ...x,
                    seq: seq++,
                    eligible: true,
                    lastUsedAt: -Infinity,
                    present: true,
                    errors: 0,
                });
        const keep = new Set(list.map((x) => x.id));
        for (const m of members.values())
            if (m.present && !keep.has(m.id)) {
                m.present = false;
                for (const l of leases.values())
                    if (l.state === "live" && l.proxyId === m.id) {
                        Object.assign(l, { state: "member-removed", endedAt: now });
                        endSession(l, now);
                    }
            }
        mgr.setMembers(list, poolsCfg());
    };
    apply(all);

    const recordTarget = (target: string, id: string, outcome: ReleaseOutcome | "expired", at: number) => {
        const k = `${target}|${id}`;
        const e = tcd.get(k) ?? { until: 0, blocks: 0 };
        if (outcome === "blocked") {
            e.blocks++;
            e.until = at + Math.min(3_600_000, 60_000 * 2 ** (e.blocks - 1));
        } else {
            if (outcome !== "error") e.blocks = 0;
            e.until = Math.max(e.until, at + 30_000);
        }
        tcd.set(k, e);
    };
    const endSession = (l: L, at: number) => {
        if (!l.session) return;
        l.session.live--;
        l.session.touchedAt = Math.max(l.session.touchedAt, at);
    };
    const sessionOf = (key: string) => {
        const x = sessions.get(key);
        if (x && x.live === 0 && now >= x.touchedAt + x.ttlMs) sessions.delete(key);
        return sessions.get(key);
    };
    const blocked = (target: string | undefined, id: string) => {
        const e = target === undefined ? undefined : tcd.get(`${target}|${id}`);
        return !!e && e.blocks > 0 && e.until > now;
    };
    const endLive = (l: L, state: "released" | "ttl", outcome: ReleaseOutcome | "expired", at: number) => {
        Object.assign(l, { state, endedAt: at });
        endSession(l, at);
        const m = members.get(l.proxyId)!;
        m.lastUsedAt = at;
        if (l.target !== undefined) recordTarget(l.target, m.id, outcome, at);
    };
    const expireModel = () => {
        for (const l of leases.values())
            if (l.state === "live" && l.expiresAt <= now) endLive(l, "ttl", "expired", l.expiresAt);
    };
    const liveHolder = (id: string) => [...leases.values()].find((l) => l.state === "live" && l.proxyId === id);
    const tUntil = (target: string | undefined, id: string) =>
        target === undefined ? 0 : (tcd.get(`${target}|${id}`)?.until ?? 0);

    let granted = 0;
    let sessionsUsed = 0;
    let stuck_ = 0;
    for (let step = 0; step < ops; step++) {
        const op = r();
        expireModel();
        const ctx = `seed ${seed} step ${step}`;
        if (op < 0.42) {
            const pool = r() < 0.5 ? pick(["a", "b", "c", "zz"]) : undefined;
            const target = pick(["t1", "t2", "t3", undefined]);
            const ttl = r() < 0.3 ? undefined : 1 + Math.floor(r() * 20);
            const session = r() < 0.33 ? pick(["s1", "s2", "s3", "s4", "s5", "s6"]) : undefined;
            const key = session === undefined ? undefined : `${pool ?? "*"}|${session}`;
            const bound = key === undefined ? undefined : sessionOf(key);
            const scope = [...members.values()].filter((m) => m.present && (pool === undefined || m.pool === pool));
            const idle = scope.filter((m) => m.eligible && !liveHolder(m.id));
            const ready = idle
                .filter((m) => m.lastUsedAt + cooldown[m.pool] * 1000 <= now && tUntil(target, m.id) <= now)
                .sort((x, y) => x.lastUsedAt - y.lastUsedAt || x.seq - y.seq);
            // The session's member skips the pool cooldown and plain target rests, not a block.
            const stuck = bound && idle.find((m) => m.id === bound.memberId && !blocked(target, m.id));
            const want = stuck || ready[0];
            const res = mgr.acquire({ pool, target, ttlSeconds: ttl, session });
            if (want) {
                assert.ok(res.ok, `${ctx}: expected ${want.id}, got ${JSON.stringify(res)}`);
                assert.equal(res.lease.proxyId, want.id, ctx);
                assert.equal(liveHolder(res.lease.proxyId), undefined, `${ctx}: double lease of ${res.lease.proxyId}`);
                assert.ok(members.get(res.lease.proxyId)!.eligible, `${ctx}: ineligible ${res.lease.proxyId} leased`);
                assert.equal(res.lease.expiresAt, now + Math.min(3600, Math.max(1, ttl ?? 300)) * 1000, ctx);
                assert.equal(res.lease.session, session, ctx);
                assert.equal(res.rebound, key === undefined ? undefined : !stuck && bound !== undefined, ctx);
                let s: S | undefined;
                if (key !== undefined) {
                    s = bound ?? { key, memberId: want.id, touchedAt: now, live: 0, ttlMs: 0 };
                    Object.assign(s, { memberId: want.id, touchedAt: now, ttlMs: sessionTtl[want.pool] * 1000 });
                    s.live++;
                    sessions.set(key, s);
                    sessionsUsed++;
                    if (stuck) stuck_++;
                }
                leases.set(res.lease.id, {
                    id: res.lease.id,
                    proxyId: res.lease.proxyId,
                    expiresAt: res.lease.expiresAt,
                    target,
                    session: s,
                    state: "live",
                });
                granted++;
            } else if (scope.length === 0) {
                assert.deepEqual(res, { ok: false, reason: "no-members", retryAfterSeconds: 30 }, ctx);
            } else {
                let earliest = Infinity;
                for (const m of idle)
                    earliest = Math.min(
                        earliest,
                        Math.max(m.lastUsedAt + cooldown[m.pool] * 1000, tUntil(target, m.id)),
                    );
                for (const p of new Set(scope.map((m) => m.pool)))
                    if (scope.some((m) => m.pool === p && liveHolder(m.id)))
                        earliest = Math.min(earliest, now + Math.max(1000, cooldown[p] * 1000));
                const want = earliest === Infinity ? 30 : Math.max(1, Math.ceil((earliest - now) / 1000));
                assert.deepEqual(res, { ok: false, reason: "none-available", retryAfterSeconds: want }, ctx);
            }
        } else if (op < 0.72) {
            const known = [...leases.values()];
            const l = r() < 0.9 && known.length ? pick(known.slice(-40)) : { id: "nope", state: "unknown" as const };
            const outcome = pick(["ok", "ok", "ok", "blocked", "error"] as const);
            const res = mgr.release(l.id, outcome);
            if (l.state === "live") {
                const m = members.get((l as L).proxyId)!;
                if (outcome === "error") m.errors++;
                endLive(l as L, "released", outcome, now);
                assert.ok(res.ok, ctx);
                assert.equal(res.errors, m.errors, ctx);
            } else if (l.state === "ttl" || l.state === "member-removed") {
                assert.deepEqual(res, { ok: false, reason: "expired", cause: l.state, endedAt: (l as L).endedAt }, ctx);
            } else {
                assert.deepEqual(res, { ok: false, reason: "unknown-lease" }, ctx);
            }
        } else if (op < 0.9) {
            now += Math.floor(r() * (r() < 0.05 ? 120_000 : 3_000));
        } else if (op < 0.96) {
            const m = pick([...members.values()].filter((x) => x.present));
            if (m) {
                m.eligible = r() < 0.6;
                mgr.setEligible(m.id, m.eligible);
            }
        } else if (op < 0.99) {
            if (r() < 0.3) cooldown[pick(["a", "b", "c"])] = pick([0, 1, 5, 10]);
            apply(all.filter(() => r() < 0.9));
            // Members that came back are new to the manager: eligible again by default.
        } else {
            mgr.sweep();
            for (const [k, e] of tcd) if ((e.blocks > 0 ? e.until + 3_600_000 : e.until) <= now) tcd.delete(k);
        }
        if (step % 250 === 0) {
            const snap = mgr.snapshot();
            const live = [...leases.values()].filter((l) => l.state === "live" && l.expiresAt > now);
            assert.equal(mgr.activeLeases, live.length, ctx);
            assert.deepEqual(
                snap
                    .filter((s) => s.state === "leased")
                    .map((s) => s.leaseId)
                    .sort(),
                live.map((l) => l.id).sort(),
                ctx,
            );
            for (const s of snap)
                if (s.state !== "leased") assert.equal(s.state === "ineligible", !members.get(s.id)!.eligible, ctx);
            expireModel(); // snapshot() ended the leases whose TTL ran out during this step
            for (const p of [undefined, "a", "b", "c", "zz"])
                for (const k of ["s1", "s2", "s3", "s4", "s5", "s6"])
                    assert.equal(
                        mgr.sessionMember(k, p),
                        sessionOf(`${p ?? "*"}|${k}`)?.memberId,
                        `${ctx}: session ${p}/${k} ${JSON.stringify(sessions.get(`${p ?? "*"}|${k}`))} now ${now}`,
                    );
        }
    }
    return { granted, sessionsUsed, stuck: stuck_ };
}

for (const seed of [1, 42, 20240611]) {
    test(`10,000 random operations agree with the brute-force model (seed ${seed})`, () => {
        const { granted, sessionsUsed, stuck } = run(seed, 10_000);
        assert.ok(granted > 1000, `only ${granted} leases granted: the mix is not exercising contention`);
        // Both branches of a session acquire are exercised: sticking, and moving or starting anew.
        assert.ok(stuck > 100 && sessionsUsed - stuck > 100, `sessions: ${stuck} stuck of ${sessionsUsed}`);
    });
}
