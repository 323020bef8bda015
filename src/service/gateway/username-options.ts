import { LABEL_KEY, LABEL_KEY_TEXT, LABEL_VALUE, LABEL_VALUE_TEXT } from "../../model/labels";
import { sessionKeySchema, SESSION_KEY_RULE } from "../leases/session-key";

/**
 * The one table of the gateway's username options. The parser (username.ts), its error texts, `GRAMMAR`,
 * the `bad_username` catalogue entry and the table in docs/api.md all come from it (a unit test compares
 * docs/api.md with `optionsMarkdown()`), so an option cannot be documented one way and parsed another.
 */
export interface GatewayUser {
    pool?: string;
    session?: string;
    target?: string;
    /** The member selector: label → value (`_zone_a` is `{zone: "a"}`, `_country_de` is `{country: "de"}`). */
    where?: Record<string, string>;
    /** At most this many retries (the pool's `gateway.retries` still caps it). */
    retries?: number;
    /** The session's idle lifetime in seconds (the pool's `sessionTtlSeconds` caps it). */
    ttlSeconds?: number;
    /** A session whose member is gone answers 502 instead of moving to a new member. */
    strict?: boolean;
    /** The session moves to a new member now. */
    rotate?: boolean;
}

/** One option: how it is written, what it does, what a bad argument is told. */
export interface UsernameOption {
    /** The word after `_`; `<label>` is the catch-all selector row. */
    name: string;
    /** The argument as docs write it (`<key>`); undefined for a flag (`_strict`). */
    arg?: string;
    /** The rule its argument must follow, in words; also the error text ("has a <name> that is not <rule>"). */
    rule?: string;
    does: string;
    /** Options it needs given too. */
    needs?: string;
    /** Reads the argument into `user`; false when it breaks `rule`. */
    read: (user: GatewayUser, value: string) => boolean;
}

const HOST_LABEL = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
const RETRIES = /^[0-5]$/;
const TTL = /^([1-9][0-9]{0,4})([smh])$/;
const UNIT = { s: 1, m: 60, h: 3600 } as const;

/** True for a host name or IPv4 address the lease target accepts (lower-case, dot-separated labels). */
export function isTargetHost(host: string): boolean {
    return host.length >= 1 && host.length <= 253 && host.split(".").every((l) => l.length <= 63 && HOST_LABEL.test(l));
}

/** Copies `fields` into `user`; true, so a `read` can end in it. */
function set(user: GatewayUser, fields: Partial<GatewayUser>): true {
    Object.assign(user, fields);
    return true;
}

/** Sets one label of the selector; a label's value rule is the same for `zone` and every other label. */
function select(user: GatewayUser, key: string, value: string): boolean {
    if (!LABEL_VALUE.test(value)) return false;
    (user.where ??= {})[key] = value;
    return true;
}

export const OPTIONS: readonly UsernameOption[] = [
    {
        name: "session",
        arg: "<key>",
        rule: SESSION_KEY_RULE.text,
        does: "a sticky session: its requests keep one member while it can serve them",
        read: (u, v) => sessionKeySchema.safeParse(v).success && set(u, { session: v }),
    },
    {
        name: "target",
        arg: "<host>",
        rule: "a host name (1–253 of a-z, 0-9, '.', '-'; lower-cased)",
        does: "the site, when it is not the request's host (per-site rests and politeness go by it)",
        read: (u, v) => isTargetHost(v.toLowerCase()) && set(u, { target: v.toLowerCase() }),
    },
    {
        name: "zone",
        arg: "<zone>",
        rule: LABEL_VALUE_TEXT,
        does: "only members in this zone (the member's `zone`): the selector's `zone` label",
        read: (u, v) => select(u, "zone", v),
    },
    {
        name: "retries",
        arg: "<n>",
        rule: "a whole number from 0 to 5",
        does: "at most n retries on another member for this request; lowers the pool's `gateway.retries`, never raises it",
        read: (u, v) => RETRIES.test(v) && set(u, { retries: Number(v) }),
    },
    {
        name: "ttl",
        arg: "<n>s|m|h",
        rule: "1–99999 followed by s, m or h",
        does: "the session's idle lifetime; over the pool's `sessionTtlSeconds` it is clamped to it",
        needs: "session",
        read: (u, v) => {
            const m = TTL.exec(v);
            if (!m) return false;
            return set(u, { ttlSeconds: Number(m[1]) * UNIT[m[2] as keyof typeof UNIT] });
        },
    },
    {
        name: "strict",
        does: 'when the session\'s member is gone (removed, unhealthy, draining) answer 502 with `Proxy-Status: egress; error=destination_unavailable; details="session_gone"` instead of moving the session',
        needs: "session",
        read: (u) => set(u, { strict: true }),
    },
    {
        name: "rotate",
        does: "move the session to another member now (503 when no other member is free)",
        needs: "session",
        read: (u) => set(u, { rotate: true }),
    },
];

/** The selector row: any other word is a label name, its argument the value members must have. */
export const LABEL_OPTION = {
    name: "<label>",
    arg: "<value>",
    rule: `a label name of ${LABEL_KEY_TEXT}, and a value of ${LABEL_VALUE_TEXT}`,
    does: "only members whose label has this value (`_country_de`); an unknown label or value is a 400 naming the known ones",
    read: (u: GatewayUser, v: string, key: string) => LABEL_KEY.test(key) && select(u, key, v),
} as const;

/** Options that may not be given together, and why. */
export const CONFLICTS: readonly [string, string, string][] = [
    ["strict", "rotate", "a strict session never moves, a rotating one moves now"],
];

/** The username grammar in one line, for error messages and the catalogue. */
export const GRAMMAR = `<pool>${OPTIONS.map((o) => `[_${o.name}${o.arg ? `_${o.arg}` : ""}]`).join("")}[_<label>_<value>]… (any order; empty pool: any pool)`;

/** The table of docs/api.md, generated: a test checks the document holds exactly this. */
export function optionsMarkdown(): string {
    const cell = (t: string) => t.replace(/\|/g, "\\|");
    const rows = [...OPTIONS, LABEL_OPTION].map((o) => {
        const form = `\`_${o.name}${o.arg ? `_${o.arg}` : ""}\``;
        const needs = "needs" in o && o.needs ? ` Needs \`_${o.needs}_…\`.` : "";
        return `| ${cell(form)} | ${cell(o.does)}.${needs} | ${cell(o.rule ?? "none (a flag)")} |`;
    });
    const head =
        '| Option | What it does | Argument (a bad one: 400 `bad_username`, "gives `<option>` a value that is not …") |';
    return [head, "| --- | --- | --- |", ...rows].join("\n");
}
