/**
 * Which member last served a client's (pool, session, target), so a client can report a block the
 * gateway could not see (inside a CONNECT tunnel) without knowing member ids: POST /v1/blocks.
 * Bounded: entries older than `windowMs` are not answered, and past `max` entries the oldest go first
 * (a Map keeps insertion order; an update moves the key to the end).
 */
export interface Served {
    proxyId: string;
    at: number;
}

export interface ServedKey {
    /** The token's name; undefined for the CLI's unix socket, which takes no token. */
    client?: string;
    pool: string;
    session?: string;
    target: string;
}

export class RecentServes {
    private readonly byKey = new Map<string, Served>();

    constructor(
        private readonly windowMs = 10 * 60_000,
        private readonly max = 100_000,
        private readonly now: () => number = Date.now,
    ) {}

    record(k: ServedKey, proxyId: string): void {
        const key = keyOf(k);
        this.byKey.delete(key);
        this.byKey.set(key, { proxyId, at: this.now() });
        if (this.byKey.size > this.max) this.byKey.delete(this.byKey.keys().next().value!);
    }

    /** The member that served `k` within the window, if any. */
    get(k: ServedKey): Served | undefined {
        const s = this.byKey.get(keyOf(k));
        return s && this.now() - s.at <= this.windowMs ? s : undefined;
    }

    get windowSeconds(): number {
        return Math.round(this.windowMs / 1000);
    }
}

/** JSON of the parts: unambiguous whatever a token name holds. */
const keyOf = (k: ServedKey) => JSON.stringify([k.client ?? null, k.pool, k.session ?? null, k.target]);
