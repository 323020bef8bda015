/**
 * Sticky sessions: which member a session's leases go to. Bookkeeping only — the manager decides
 * whether the bound member can take the next lease and picks a new one when it cannot.
 *
 * A session is named by the crawler (`session` in POST /v1/leases) and scoped to the pool the request
 * names, or to "any pool" when it names none: `web`/`s1` and `api`/`s1` are two sessions.
 * It is idle while none of its leases is live; after `ttlMs` idle it is forgotten, and the next
 * request with its key starts a new one. `ttlMs` is the session TTL of the pool of the member it was
 * bound to by its latest lease.
 */
export interface SessionRec {
    readonly key: string;
    memberId: string;
    /** Its last acquire or the end of one of its leases, whichever is later. */
    touchedAt: number;
    /** Live leases taken through it: a session never expires while one runs. */
    live: number;
    ttlMs: number;
}

/** Map key of a session: pool names are DNS labels, so a newline cannot appear in one. */
export function sessionKey(pool: string | undefined, session: string): string {
    return `${pool ?? ""}\n${session}`;
}

export class SessionTable {
    /** In touch order (a touch re-inserts), so the cap drops the session idle the longest. */
    private readonly byKey = new Map<string, SessionRec>();

    constructor(private readonly maxSessions: number) {}

    get size(): number {
        return this.byKey.size;
    }

    /** The live session under `key`; an expired one is dropped and undefined returned. O(1). */
    get(key: string, now: number): SessionRec | undefined {
        const s = this.byKey.get(key);
        if (s && expired(s, now)) {
            this.byKey.delete(key);
            return undefined;
        }
        return s;
    }

    /** Binds `key` to `memberId` (a new session, or a rebind of `existing`) and counts a live lease on it. */
    acquired(key: string, existing: SessionRec | undefined, memberId: string, ttlMs: number, now: number): SessionRec {
        const s = existing ?? { key, memberId, touchedAt: now, live: 0, ttlMs };
        s.memberId = memberId;
        s.live++;
        this.touch(s, now, ttlMs);
        if (this.byKey.size > this.maxSessions) this.evictOldest(s);
        return s;
    }

    /** One of the session's leases ended at `at` (released, expired or taken away). */
    ended(s: SessionRec, at: number): void {
        s.live--;
        // A session the cap dropped is not brought back by its lease's end.
        if (this.byKey.get(s.key) === s) this.touch(s, at, s.ttlMs);
    }

    /** Drops expired sessions; O(sessions), meant for the periodic sweep. */
    prune(now: number): number {
        let dropped = 0;
        for (const [k, s] of this.byKey) {
            if (!expired(s, now)) continue;
            this.byKey.delete(k);
            dropped++;
        }
        return dropped;
    }

    /** Bound member of a session, for tests and discovery; undefined when unknown or expired. */
    memberOf(key: string, now: number): string | undefined {
        return this.get(key, now)?.memberId;
    }

    private touch(s: SessionRec, at: number, ttlMs: number): void {
        s.touchedAt = Math.max(s.touchedAt, at);
        s.ttlMs = ttlMs;
        this.byKey.delete(s.key);
        this.byKey.set(s.key, s);
    }

    private evictOldest(keep: SessionRec): void {
        for (const [k, s] of this.byKey) {
            if (s === keep) continue;
            this.byKey.delete(k);
            return;
        }
    }
}

function expired(s: SessionRec, now: number): boolean {
    return s.live === 0 && now >= s.touchedAt + s.ttlMs;
}
