import type { ReleaseOutcome } from "../leases";

/**
 * How a request through the gateway ended, as a lease release outcome. The member is charged (`error`,
 * which counts toward its health) only for what it did: the gateway could not reach it, it broke off
 * an answer, or it answered with an error of its own making. An origin's 5xx went through a working
 * member, so it is `ok` for the member (it would otherwise mark every member unhealthy when one site
 * has a bad day). A member's own errors are told apart from relayed ones by what proxies put on them:
 * proxy-chain's 590–599 codes (members run by proxy-chain) and squid's `X-Squid-Error` header (members running squid).
 */

/** What counts as "the origin blocked this member": status codes, and header markers (CDN challenge pages). */
export interface BlockRules {
    /** @default [403, 429] */
    statuses: readonly number[];
    /** A header whose presence (or whose value containing `contains`, case-insensitive) marks a block. */
    headers: readonly { name: string; contains?: string }[];
}

export const DEFAULT_BLOCK_RULES: BlockRules = { statuses: [403, 429], headers: [] };

/** A plain HTTP request's end, as the gateway saw it. */
export interface HttpEnd {
    /** The status relayed from the member, when it sent a response head. */
    status?: number;
    /** The relayed response's raw headers (name, value, name, value, …). */
    rawHeaders?: readonly string[];
    /** The whole answer reached the client. */
    complete: boolean;
    /** The answer ended early not by the member: the client went away, or the gateway cut it (lease TTL, shutdown). */
    clientGone: boolean;
}

/** A CONNECT tunnel's end: `open` once the member answered 200, `refused` for another answer, `none` without one. */
export interface TunnelEnd {
    member: "open" | "refused" | "none";
    clientGone: boolean;
}

/** The member's own error answers (not an origin's): proxy-chain's 59x codes, squid's X-Squid-Error pages. */
export function isMemberError(status: number, rawHeaders: readonly string[] = []): boolean {
    if (status >= 590 && status <= 599) return true;
    return status >= 400 && header(rawHeaders, "x-squid-error") !== undefined;
}

/** True when the relayed answer says the origin blocked the member. */
export function isBlocked(status: number, rawHeaders: readonly string[], rules: BlockRules): boolean {
    if (rules.statuses.includes(status)) return true;
    for (const m of rules.headers) {
        const v = header(rawHeaders, m.name);
        if (v !== undefined && (m.contains === undefined || v.toLowerCase().includes(m.contains.toLowerCase())))
            return true;
    }
    return false;
}

export function httpOutcome(end: HttpEnd, rules: BlockRules): ReleaseOutcome {
    if (end.status === undefined) return end.clientGone ? "ok" : "error";
    if (isMemberError(end.status, end.rawHeaders)) return "error";
    if (isBlocked(end.status, end.rawHeaders ?? [], rules)) return "blocked";
    // Cut off mid-answer and not by the client: the member (or its link) broke.
    if (!end.complete && !end.clientGone) return "error";
    return "ok";
}

/** A tunnel carries TLS the gateway cannot read: only whether the member opened it is known. */
export function tunnelOutcome(end: TunnelEnd): ReleaseOutcome {
    if (end.member === "open") return "ok";
    if (end.member === "refused") return "error";
    return end.clientGone ? "ok" : "error";
}

/** The first value of header `name` (lower-case) in a raw header list. */
function header(raw: readonly string[], name: string): string | undefined {
    for (let i = 0; i + 1 < raw.length; i += 2)
        if (raw[i].length === name.length && raw[i].toLowerCase() === name) return raw[i + 1];
    return undefined;
}
