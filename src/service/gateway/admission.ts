import { hasScope, type StoredToken, tokenMatcher } from "../http/auth";
import type { Fleet, FleetAcquire, LeaseView } from "../fleet/fleet";
import type { MaybePromise } from "../store/types";
import { StoreUnavailableError } from "../../state/redis/unavailable";
import type { GatewayRefusal } from "../observe/gateway-metrics";
import { type GatewayUser, parseUsername } from "./username";
import type { Door } from "./doors";
import { waitingLine, worthWaiting, type WaitingRoom } from "./waiting";
import { gatewayStatusOf } from "../http/catalogue";
import type { PolitenessMetrics } from "../observe/politeness-metrics";

/** A refusal as the gateway answers it: status (the catalogue's gateway status), error code, message and extra headers. */
export interface Refusal {
    status: number;
    code: GatewayRefusal | "none_available" | "not_ready" | "store_unavailable" | "target_busy";
    message: string;
    headers?: Record<string, string>;
}

/** The refusal of `code`, with the status the catalogue gives the gateway for it. */
export function refusal(code: Refusal["code"], message: string, headers?: Record<string, string>): Refusal {
    return { status: gatewayStatusOf(code), code, message, headers };
}

export const PROXY_AUTHENTICATE = 'Basic realm="egress gateway", charset="UTF-8"';

/** What a request may go ahead with: its client, the lease, and what the lease was asked for. */
export interface Admitted {
    client: string;
    lease: LeaseView;
    pool: string;
    session?: string;
    target: string;
    /** Ends the client's in-flight slot; call exactly once when the request or tunnel ends. */
    leave(): void;
    /** What the lease was asked for: a retry asks the same, less the members already tried. */
    ask: FleetAcquireRequest;
    /** The username's `_retries_<n>`: lowers the pool's `gateway.retries` for this request. */
    retries?: number;
}

/** A gateway acquire: the lease request (AcquireRequest) as the gateway fills it in. */
export type FleetAcquireRequest = Parameters<Fleet["acquire"]>[0];

export interface AdmissionRequest {
    username: string;
    password: string;
    /** The request's host (CONNECT target or absolute URL), used as the lease target unless `_target_` overrides it. */
    hostname: string;
    /** Registers what to do when the client goes away while the request waits for a member. */
    onGone?: (leave: () => void) => () => void;
    /** The door it came through: an allowed source, a sticky port (doors.ts). */
    door?: Door;
    /**
     * The same object for the same credentials on one connection (proxy-auth.ts connectionCredentials):
     * a check that passed for it is not repeated (the token hash, the username's grammar).
     */
    key?: object;
}

/**
 * The username's options, then the door's: a sticky port's session and pool, then (only when the
 * request acts as the allowed source's token) that rule's pool. What the client says explicitly wins.
 */
function withDoor(user: GatewayUser, door: Door, asAllowed: boolean): GatewayUser {
    const pool = user.pool ?? door.sticky?.pool ?? (asAllowed ? door.allow?.pool : undefined);
    const session = user.session ?? door.sticky?.session;
    return { ...user, ...(pool !== undefined && { pool }), ...(session !== undefined && { session }) };
}

/**
 * Who may use the gateway and with which member: the token (the proxy password, compared in constant
 * time, scope `lease`), the username's pool and options, the token's `gatewayConcurrency`, then one lease
 * from the fleet. With the memory store, synchronous: the slot count and the lease are taken in the same
 * turn of the event loop. With a Redis store the slot is taken first and given back if no lease comes.
 */
export class Admission {
    private readonly find: (presented: string) => StoredToken | undefined;
    /** Tokens by name, for allowed sources (which present none). */
    private readonly named: Map<string, StoredToken>;
    /** In-flight requests per token name. */
    private readonly inFlight = new Map<string, number>();
    /** Credentials that passed, by their connection's key (AdmissionRequest.key); tokens do not change while the gateway runs. */
    private readonly passed = new WeakMap<object, { ok: true; token: StoredToken; user: GatewayUser }>();

    constructor(
        tokens: StoredToken[],
        private readonly fleet: Fleet,
        private readonly ttlSeconds: number,
        /** Where requests wait for a busy pool (waiting.ts); without one, nothing free is an instant 503. */
        private readonly room?: WaitingRoom,
        /** Counts requests per-site politeness held back (waited, refused 429 target_busy). */
        private readonly politeness?: PolitenessMetrics,
    ) {
        this.find = tokenMatcher(tokens);
        this.named = new Map(tokens.map((t) => [t.name, t]));
    }

    /**
     * The credentials alone: the token (the password, scope `lease`) and the username's grammar and pool.
     * `admit` checks them first; a front door with an authentication step of its own (SOCKS5's RFC 1929
     * sub-negotiation, socks.ts) checks them there.
     */
    credentials(
        username: string,
        password: string,
        door: Door = {},
    ): { ok: true; token: StoredToken; user: GatewayUser } | { ok: false; refusal: Refusal } {
        const no = (code: Refusal["code"], message: string, headers?: Record<string, string>) => ({
            ok: false as const,
            refusal: refusal(code, message, headers),
        });
        const challenge = { "Proxy-Authenticate": PROXY_AUTHENTICATE };
        // An allowed source without a token acts as the rule's token (doors.ts); a token it sends wins.
        const allowed = !password && door.allow ? this.named.get(door.allow.token) : undefined;
        if (!password && !allowed)
            return no(
                "unauthenticated",
                "proxy credentials required: use http://<pool>:<token>@<gateway> as the proxy URL (the token is the password)",
                challenge,
            );
        const token = allowed ?? this.find(password);
        if (!token)
            return no("unauthenticated", "invalid proxy credentials: the password must be an API token", challenge);
        if (!hasScope(token, "lease"))
            return no("forbidden", `token "${token.name}" lacks the \`lease\` scope the gateway needs`, challenge);
        const parsed = parseUsername(username);
        if (!parsed.ok) return no("bad_username", parsed.message);
        const user = withDoor(parsed.user, door, allowed !== undefined);
        const pool = user.pool;
        if (pool !== undefined && !this.fleet.hasPool(pool)) return no("unknown_pool", `no pool named "${pool}"`);
        return { ok: true, token, user };
    }

    /** `credentials` for `r`, answered from the connection's last check when its key passed before and its pool still exists. */
    private checkedOnce(r: AdmissionRequest): ReturnType<Admission["credentials"]> {
        const hit = r.key === undefined ? undefined : this.passed.get(r.key);
        if (hit !== undefined && (hit.user.pool === undefined || this.fleet.hasPool(hit.user.pool))) return hit;
        const checked = this.credentials(r.username, r.password, r.door);
        if (checked.ok && r.key !== undefined) this.passed.set(r.key, checked);
        return checked;
    }

    admit(r: AdmissionRequest): MaybePromise<{ ok: true; admitted: Admitted } | { ok: false; refusal: Refusal }> {
        const no = (code: Refusal["code"], message: string, headers?: Record<string, string>) => ({
            ok: false as const,
            refusal: refusal(code, message, headers),
        });
        const checked = this.checkedOnce(r);
        if (!checked.ok) return checked;
        const { token, user } = checked;
        const { pool, session, where, retries } = user;
        const limit = token.gatewayConcurrency;
        const now = this.inFlight.get(token.name) ?? 0;
        if (limit !== undefined && now >= limit)
            return no(
                "over_limit",
                `token "${token.name}" has ${now} requests in flight through the gateway, its limit (gatewayConcurrency ${limit}); wait for one to finish`,
            );
        const target = user.target ?? r.hostname.toLowerCase();
        this.inFlight.set(token.name, now + 1);
        let left = false;
        const leave = () => {
            if (left) return;
            left = true;
            const n = (this.inFlight.get(token.name) ?? 1) - 1;
            if (n > 0) this.inFlight.set(token.name, n);
            else this.inFlight.delete(token.name);
        };
        const done = (got: FleetAcquire) => {
            if (!got.ok) {
                leave();
                if (got.reason === "target-busy") this.politeness?.held(got.pool, got.rule, "gateway", "refused");
                return { ok: false as const, refusal: acquireRefusal(got) };
            }
            return {
                ok: true as const,
                admitted: {
                    client: token.name,
                    lease: got.lease,
                    pool: got.lease.proxy.pool,
                    session,
                    target,
                    leave,
                    ask,
                    retries,
                },
            };
        };
        // Shared: gateway requests share a member up to its pool's gateway.memberConcurrency.
        const ask: FleetAcquireRequest = {
            ...sessionOptions(user),
            pool,
            target,
            session,
            where,
            ttlSeconds: this.ttlSeconds,
            shared: true,
        };
        // The first attempt is the request's one refusal the autoscaler hears of; a waiter's retries are not new demand.
        const acquire = (via: "gateway" | null) => this.fleet.acquire(ask, via);
        const attempt = () => acquire(null);
        // Nothing free: wait in line for the pool's members (the same pool, zone and target) if waiting is on.
        // The line's key is made only when someone waits: most requests find a member at once.
        let line: string | undefined;
        const lineOf = () => (line ??= waitingLine(ask));
        const waitOr = (g: FleetAcquire): MaybePromise<FleetAcquire> => {
            if (!this.room?.enabled || !worthWaiting(g)) return g;
            if (!g.ok && g.reason === "target-busy") this.politeness?.held(g.pool, g.rule, "gateway", "waited");
            return this.room.wait(lineOf(), attempt, g, r.onGone);
        };
        // First come first served: behind others already waiting, a newcomer queues without trying (and
        // is the pool's demand all the same).
        const queueBehind = this.room?.enabled === true && this.room.anyWaiting && this.room.hasLine(lineOf());
        if (queueBehind && pool !== undefined) this.fleet.refused(pool, "gateway");
        const first = queueBehind ? behind(pool) : acquire("gateway");
        const got = first instanceof Promise ? first.then(waitOr) : waitOr(first);
        if (!(got instanceof Promise)) return done(got);
        return got.then(done, (e) => {
            leave();
            if (e instanceof StoreUnavailableError)
                return no("store_unavailable", e.message, { "Retry-After": String(e.retryAfterSeconds) });
            throw e;
        });
    }
}

/** The answer of a request that queued behind others without trying: what it gets if its wait runs out. */
function behind(pool: string | undefined): FleetAcquire {
    return {
        ok: false,
        reason: "none-available",
        message: `every member of ${pool ? `pool "${pool}"` : "any pool"} this request could use is busy and others were waiting first; retry in 1s`,
        retryAfterSeconds: 1,
    };
}

/** The username's session options as the lease store takes them (only those given). */
function sessionOptions(user: GatewayUser): Pick<FleetAcquireRequest, "sessionTtlSeconds" | "strict" | "rotate"> {
    return {
        ...(user.ttlSeconds !== undefined && { sessionTtlSeconds: user.ttlSeconds }),
        ...(user.strict && { strict: true }),
        ...(user.rotate && { rotate: true }),
    };
}

/** The refusal for an acquire that got no member: its reason's code, with Retry-After when waiting helps. */
function acquireRefusal(got: Extract<FleetAcquire, { ok: false }>): Refusal {
    const later = () => ({ "Retry-After": String(got.retryAfterSeconds) });
    if (got.reason === "unknown-pool") return refusal("unknown_pool", got.message);
    if (got.reason === "unknown-zone") return refusal("unknown_zone", got.message);
    if (got.reason === "unknown-label") return refusal("unknown_label", got.message);
    if (got.reason === "session-gone") return refusal("session_gone", got.message);
    if (got.reason === "target-busy") return refusal("target_busy", got.message, later());
    return refusal("none_available", got.message, later());
}
