import type { Fleet } from "../fleet/fleet";
import { type MaybePromise, settle } from "../store/types";

/**
 * Which members lately served a client's (pool, session, target), so a client can report a block the
 * gateway could not see (inside a CONNECT tunnel): POST /v1/blocks names the member from the answer's
 * `X-Egress-Proxy`, or takes the last one. Several per key (up to PER_KEY, the latest last): with requests
 * to one site in flight at once, "the last" may not be the one whose answer was blocked.
 * Bounded: entries older than `windowMs` are not answered, and past `max` keys the oldest go first
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

/** Members remembered per key: enough for the requests one client has in flight to one site. */
const PER_KEY = 16;

export class RecentServes {
    private readonly byKey = new Map<string, Served[]>();

    constructor(
        private readonly windowMs = 10 * 60_000,
        private readonly max = 100_000,
        private readonly now: () => number = Date.now,
    ) {}

    record(k: ServedKey, proxyId: string): void {
        const key = keyOf(k);
        const served = this.byKey.get(key);
        if (served === undefined) this.byKey.set(key, [{ proxyId, at: this.now() }]);
        else {
            // In place: the member moves to the end, the oldest goes past PER_KEY, the key to the Map's end.
            const i = served.findIndex((s) => s.proxyId === proxyId);
            if (i >= 0) served.splice(i, 1);
            served.push({ proxyId, at: this.now() });
            if (served.length > PER_KEY) served.shift();
            this.byKey.delete(key);
            this.byKey.set(key, served);
        }
        if (this.byKey.size > this.max) this.byKey.delete(this.byKey.keys().next().value!);
    }

    /** The member `proxyId` if it served `k` within the window, else (no `proxyId`) the last one that did. */
    get(k: ServedKey, proxyId?: string): Served | undefined {
        const served = this.byKey.get(keyOf(k)) ?? [];
        const s = proxyId === undefined ? served.at(-1) : served.find((x) => x.proxyId === proxyId);
        return s && this.now() - s.at <= this.windowMs ? s : undefined;
    }

    get windowSeconds(): number {
        return Math.round(this.windowMs / 1000);
    }
}

/** JSON of the parts: unambiguous whatever a token name holds. */
const keyOf = (k: ServedKey) => JSON.stringify([k.client ?? null, k.pool, k.session ?? null, k.target]);

/**
 * POST /v1/blocks: the member that last served this client's (pool, session, target) through the
 * gateway rests for the target as after a `blocked` release. For answers the gateway cannot read
 * (inside a CONNECT tunnel) or blocks only the client recognises (a captcha page with status 200).
 */
export function reportServedBlock(
    recent: RecentServes,
    fleet: Pick<Fleet, "reportBlocked">,
    k: ServedKey,
    proxyId?: string,
): MaybePromise<{ ok: true; proxyId: string; until: number } | { ok: false; message: string }> {
    const target = k.target.toLowerCase();
    const served = recent.get({ ...k, target }, proxyId);
    const what = `pool "${k.pool}", target "${target}"${k.session ? `, session "${k.session}"` : ""}`;
    if (!served)
        return {
            ok: false,
            message: `the gateway served no request for ${what}${proxyId ? ` through ${proxyId}` : ""} with this token in the last ${recent.windowSeconds} s`,
        };
    return settle(fleet.reportBlocked(served.proxyId, target), (until) => {
        if (until === undefined)
            return {
                ok: false as const,
                message: `the member that served ${what} (${served.proxyId}) has left the stack`,
            };
        return { ok: true as const, proxyId: served.proxyId, until };
    });
}
