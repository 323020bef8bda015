import { DNS1123_LABEL } from "../../model/fields";
import { sessionKeySchema, SESSION_KEY_RULE } from "../leases/session-key";

/**
 * The gateway's proxy username: which pool, and options, in a string any HTTP client can send as the
 * user part of its proxy URL (`http://<username>:<token>@127.0.0.1:8888`).
 *
 *   username := [ pool ] ( "_" option )*
 *   option   := "session_" key | "target_" host | "zone_" zone | "retries_" n   (each at most once, in any order)
 *   pool     := a DNS-1123 label (what pool names are, src/model/fields.ts); empty = any pool
 *   key      := 1–64 of [A-Za-z0-9-]
 *   host     := 1–253 of [a-z0-9.-] (lower-cased), no empty or edge-dashed label
 *   zone     := 1–63 of [A-Za-z0-9.:-], as the member's `zone` (a zone with `_` in it cannot be named here)
 *   n        := 0–5, the most retries on another member for this request: it lowers the pool's
 *               `gateway.retries`, never raises it (the pool's bound protects its members)
 *
 * `_` is the separator because no pool name, session key or host name may contain it: a pool called
 * `a-session-b` reads `a-session-b_session_k1` unambiguously, where a `-session-` grammar could not.
 * `_` is unreserved in URLs, so it needs no percent-encoding in a proxy URL's user part.
 */
export interface GatewayUser {
    pool?: string;
    session?: string;
    target?: string;
    zone?: string;
    /** At most this many retries (the pool's `gateway.retries` still caps it). */
    retries?: number;
}

export type ParsedUser = { ok: true; user: GatewayUser } | { ok: false; message: string };

/** Longest username read; longer ones are refused before any splitting. */
export const MAX_USERNAME = 400;
const HOST_LABEL = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
const ZONE = /^[A-Za-z0-9.:-]{1,63}$/;
const RETRIES = /^[0-5]$/;

/** The username grammar in one line, for error messages. */
export const GRAMMAR =
    "<pool>[_session_<key>][_target_<host>][_zone_<zone>][_retries_<n>] (empty pool: any pool; `_` separates the parts)";

/** True for a host name or IPv4 address the lease target accepts (lower-case, dot-separated labels). */
export function isTargetHost(host: string): boolean {
    return host.length >= 1 && host.length <= 253 && host.split(".").every((l) => l.length <= 63 && HOST_LABEL.test(l));
}

/** Parses a proxy username. Never throws; the message quotes at most the first 64 characters of bad input. */
export function parseUsername(raw: string): ParsedUser {
    const bad = (why: string): ParsedUser => ({
        ok: false,
        message: `proxy username ${quote(raw)} ${why}; expected ${GRAMMAR}`,
    });
    if (raw.length > MAX_USERNAME) return bad(`is longer than ${MAX_USERNAME} characters`);
    const parts = raw.split("_");
    const pool = parts[0];
    const user: GatewayUser = {};
    if (pool !== "") {
        if (!DNS1123_LABEL.test(pool))
            return bad(`names pool ${quote(pool)}, which is not a pool name (lower-case letters, digits and '-')`);
        user.pool = pool;
    }
    if ((parts.length - 1) % 2 !== 0) return bad(`has an option without a value`);
    for (let i = 1; i < parts.length; i += 2) {
        const [name, value] = [parts[i], parts[i + 1]];
        if (name === "session") {
            if (user.session !== undefined) return bad("gives `session` twice");
            if (!sessionKeySchema.safeParse(value).success)
                return bad(`has a session key that is not ${SESSION_KEY_RULE.text}`);
            user.session = value;
        } else if (name === "target") {
            if (user.target !== undefined) return bad("gives `target` twice");
            const host = value.toLowerCase();
            if (!isTargetHost(host)) return bad("has a target that is not a host name");
            user.target = host;
        } else if (name === "zone") {
            if (user.zone !== undefined) return bad("gives `zone` twice");
            if (!ZONE.test(value)) return bad("has a zone that is not 1–63 of letters, digits, '.', ':' and '-'");
            user.zone = value;
        } else if (name === "retries") {
            if (user.retries !== undefined) return bad("gives `retries` twice");
            if (!RETRIES.test(value)) return bad("has a retries count that is not a whole number from 0 to 5");
            user.retries = Number(value);
        } else {
            // "(known: …)" names the options with a text value; `retries` is the one numeric flag.
            return bad(`has an unknown option ${quote(name)} (known: session, target, zone), and it is not retries`);
        }
    }
    return { ok: true, user };
}

/** JSON-quoted, cut to 64 characters: hostile input stays printable and short in answers and logs. */
function quote(s: string): string {
    return JSON.stringify(s.length > 64 ? `${s.slice(0, 64)}…` : s);
}
