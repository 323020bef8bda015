/**
 * What an acquire answers (Fleet.acquire, for POST /v1/leases and the gateway): the lease with the
 * member's address, or a refusal in words. Pure: the fleet passes the request, the store's result and,
 * for a grant, the member and its upstream URL.
 */
import type { ProxyMember } from "../../model";
import type { AcquireResult } from "../leases";
import { selectorOf, type AcquireRequest } from "../leases/types";
import type { FleetAcquire } from "./views";

const scopeOf = (req: AcquireRequest) => (req.pool ? `pool "${req.pool}"` : "any pool");

/** The store's refusal, with a message naming the scope and when to retry. */
export function refusal(req: AcquireRequest, r: Extract<AcquireResult, { ok: false }>): FleetAcquire {
    if (r.reason === "target-busy") {
        const message = `pool "${r.pool}" is at its politeness limit for ${req.target} (rule "${r.rule}" in its \`targets\`); retry in ${r.retryAfterSeconds}s`;
        return { ...r, message };
    }
    const sel = selectorOf(req);
    const where = scopeOf(req) + (sel.length ? ` (${sel.map(([k, v]) => `${k} "${v}"`).join(", ")})` : "");
    if (r.reason === "session-gone") {
        const message = `session "${req.session}" was bound to member ${r.member}, which is gone (left ${scopeOf(req)}, unhealthy or draining); it is strict, so it does not move: drop \`_strict\` or start a new session`;
        return { ok: false, reason: r.reason, message, retryAfterSeconds: 0 };
    }
    const message =
        r.reason === "no-members"
            ? `${where} has no members; scale it up`
            : `no proxy in ${where} is healthy, unleased and out of cooldown${req.target ? ` for ${req.target}` : ""}; retry in ${r.retryAfterSeconds}s`;
    return { ok: false, reason: r.reason, message, retryAfterSeconds: r.retryAfterSeconds };
}

/** The free members are ones this replica has not read from the stack yet (Fleet.notKnownHere). */
export function notReadYet(req: AcquireRequest): FleetAcquire {
    return {
        ok: false,
        reason: "none-available",
        message: `the proxies free in ${scopeOf(req)} were added a moment ago and this replica has not read them yet; retry in 1s`,
        retryAfterSeconds: 1,
    };
}

/** A granted lease on member `m` (`url`: its upstream URL, credentials included). `known`: the session had a member before. */
export function grantAnswer(
    req: AcquireRequest,
    known: boolean,
    r: Extract<AcquireResult, { ok: true }>,
    m: ProxyMember,
    url: string,
): FleetAcquire {
    return {
        ok: true,
        ...(req.session !== undefined && {
            session: r.session ?? (!known ? ("new" as const) : r.rebound ? ("rebound" as const) : ("kept" as const)),
        }),
        lease: {
            id: r.lease.id,
            proxy: {
                id: m.id,
                pool: m.pool,
                provider: m.provider,
                zone: m.zone,
                host: m.host,
                port: m.port,
                url,
                ...(m.auth ? { auth: true } : {}),
            },
            target: r.lease.target,
            ...(r.lease.session !== undefined && { session: r.lease.session, rebound: r.rebound }),
            leasedAt: isoTime(r.lease.leasedAt),
            expiresAt: isoTime(r.lease.expiresAt),
        },
    };
}

/** The last two seconds formatted (a grant's lease and expiry times), with their epoch seconds. */
const isoSeconds: [number, string][] = [
    [NaN, ""],
    [NaN, ""],
];

/** Whole milliseconds from 1970 to the year 9999: ISO text of one fixed shape, `YYYY-MM-DDTHH:MM:SS.mmmZ`. */
const FOUR_DIGIT_YEARS = (ms: number) => Number.isInteger(ms) && ms >= 0 && ms < 253402300800000;

/**
 * `new Date(ms).toISOString()`, made from the second's text when that second was formatted last time
 * (each grant formats two times, each mostly in the same second as the previous grant's).
 */
export function isoTime(ms: number): string {
    const sec = Math.floor(ms / 1000);
    const slot = isoSeconds[0][0] === sec ? isoSeconds[0] : isoSeconds[1][0] === sec ? isoSeconds[1] : undefined;
    if (slot === undefined || !FOUR_DIGIT_YEARS(ms)) {
        const text = new Date(ms).toISOString();
        if (!FOUR_DIGIT_YEARS(ms)) return text;
        isoSeconds[1] = isoSeconds[0];
        isoSeconds[0] = [sec, text.slice(0, 20)];
        return text;
    }
    const frac = ms - sec * 1000;
    return `${slot[1]}${frac < 10 ? "00" : frac < 100 ? "0" : ""}${frac}Z`;
}
