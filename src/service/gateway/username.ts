import { DNS1123_LABEL } from "../../model/fields";
import { CONFLICTS, GRAMMAR, LABEL_OPTION, OPTIONS, type GatewayUser, type UsernameOption } from "./username-options";

export { GRAMMAR, isTargetHost, type GatewayUser } from "./username-options";

/**
 * The gateway's proxy username: which pool, and options, in a string any HTTP client can send as the
 * user part of its proxy URL (`http://<username>:<token>@127.0.0.1:8888`).
 *
 *   username := [ pool ] ( "_" option )*
 *   option   := name [ "_" argument ]     (the table in username-options.ts: each at most once, any order)
 *   pool     := a DNS-1123 label (what pool names are, src/model/fields.ts); empty = any pool
 *
 * A word the table does not know is a label name (`_country_de`): the member selector, of which `_zone_`
 * is one case. `_` is the separator because no pool name, session key, host, label or value may contain
 * it: a pool called `a-session-b` reads `a-session-b_session_k1` unambiguously. `_` is unreserved in
 * URLs, so it needs no percent-encoding in a proxy URL's user part.
 */
export type ParsedUser = { ok: true; user: GatewayUser } | { ok: false; message: string };

/** Longest username read; longer ones are refused before any splitting. */
export const MAX_USERNAME = 400;

const BY_NAME = new Map(OPTIONS.map((o) => [o.name, o]));

/** Parses a proxy username. Never throws; the message quotes at most the first 64 characters of bad input. */
export function parseUsername(raw: string): ParsedUser {
    const bad = (why: string): ParsedUser => ({
        ok: false,
        message: `proxy username ${quote(raw)} ${why}; expected ${GRAMMAR}`,
    });
    if (raw.length > MAX_USERNAME) return bad(`is longer than ${MAX_USERNAME} characters`);
    const parts = raw.split("_");
    const user: GatewayUser = {};
    if (parts[0] !== "") {
        if (!DNS1123_LABEL.test(parts[0]))
            return bad(`names pool ${quote(parts[0])}, which is not a pool name (lower-case letters, digits and '-')`);
        user.pool = parts[0];
    }
    const seen = new Set<string>();
    for (let i = 1; i < parts.length;) {
        const why = readOption(user, parts, i, seen);
        if (typeof why === "string") return bad(why);
        i += why;
    }
    const why = crossCheck(seen);
    return why ? bad(why) : { ok: true, user };
}

/** Reads the option at parts[i] into `user`: the parts it took, or why it is refused. */
function readOption(user: GatewayUser, parts: string[], i: number, seen: Set<string>): number | string {
    const name = parts[i];
    const opt: UsernameOption | undefined = BY_NAME.get(name);
    if (opt && opt.arg === undefined) {
        if (seen.has(name)) return `gives \`${name}\` twice`;
        seen.add(name);
        opt.read(user, "");
        return 1;
    }
    const value = parts[i + 1];
    if (name === "") return "has an empty option (two `_` in a row, or one at the end)";
    if (value === undefined) return `has option ${quote(name)} without a value`;
    const key = opt ? name : `label:${name}`;
    // `_zone_` is the selector's zone label: `_zone_a_zone_b` is the same repeat either way.
    if (seen.has(key) || (name === "zone" && seen.has("label:zone"))) return `gives \`${name}\` twice`;
    seen.add(key);
    if (opt) return opt.read(user, value) ? 2 : `gives \`${name}\` a value that is not ${opt.rule}`;
    return LABEL_OPTION.read(user, value, name)
        ? 2
        : `has option ${quote(name)}, which is no option (${OPTIONS.map((o) => o.name).join(", ")}) and as a label selector needs ${LABEL_OPTION.rule}`;
}

/** The rules between options: `needs` and the conflicts. */
function crossCheck(seen: Set<string>): string | undefined {
    for (const o of OPTIONS)
        if (o.needs && seen.has(o.name) && !seen.has(o.needs)) return `gives \`${o.name}\` without \`${o.needs}\``;
    for (const [a, b, why] of CONFLICTS)
        if (seen.has(a) && seen.has(b)) return `gives both \`${a}\` and \`${b}\`: ${why}`;
    return undefined;
}

/** JSON-quoted, cut to 64 characters: hostile input stays printable and short in answers and logs. */
function quote(s: string): string {
    return JSON.stringify(s.length > 64 ? `${s.slice(0, 64)}…` : s);
}
