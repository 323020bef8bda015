import * as net from "node:net";
import type { Socket } from "node:net";
import { DNS1123_LABEL } from "../../model/fields";
import type { ConfigProblem } from "../../model";
import { hasScope, type StoredToken } from "../http/auth";

/**
 * The gateway's browser-friendly doors (issue 36). Chrome's `--proxy-server` cannot carry credentials,
 * so a browser needs a way in that asks for nothing but an address:
 *
 * - an allowed source (`--gateway-allow <cidr>=<token-name>[:<pool>]`): a request from these addresses
 *   without credentials acts as that named token (its scopes, its name in logs and metrics) and
 *   defaults to that pool. Nothing is allowed unless named, loopback included.
 * - a sticky port (`--gateway-sticky-ports <from>-<to>[:<pool>]`): each port is one sticky session
 *   (`port-<n>`) of one pool, for a client that can choose nothing but the port. It still needs
 *   credentials or an allowed source.
 *
 * Pure parsing and matching: each error names the rule as given; the CLI adds the flag.
 */

/** The most ports one `--gateway-sticky-ports` range may open: each is a listener and a session. */
export const MAX_STICKY_PORTS = 1000;

export interface AllowRule {
    /** As given (`10.0.0.0/8=crawler:web`), for errors and logs. */
    rule: string;
    address: string;
    prefix: number;
    family: "ipv4" | "ipv6";
    /** The name of a token in the tokens file or EGRESS_TOKENS. */
    token: string;
    pool?: string;
}

export interface StickyRange {
    rule: string;
    from: number;
    to: number;
    pool?: string;
}

/** What a request's door adds to it: the allowed source's token and pool, the sticky port's session and pool. */
export interface Door {
    allow?: { token: string; pool?: string };
    sticky?: { session: string; pool?: string };
}

/** `::ffff:127.0.0.1` is 127.0.0.1: a dual-stack listener reports IPv4 clients that way. */
const V4_MAPPED = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;

/** An address as the family it really is: IPv4-mapped IPv6 addresses become IPv4. */
export function plainAddress(address: string): { address: string; family: "ipv4" | "ipv6" } | undefined {
    const mapped = V4_MAPPED.exec(address);
    const a = mapped ? mapped[1] : address;
    const v = net.isIP(a);
    return v === 4 ? { address: a, family: "ipv4" } : v === 6 ? { address: a, family: "ipv6" } : undefined;
}

/** `<cidr>=<token-name>[:<pool>]`, a bare address meaning the one address (/32 or /128). */
export function parseAllowRule(rule: string): AllowRule {
    const bad = (why: string) => new Error(`"${rule}": ${why}; expected <cidr>=<token-name>[:<pool>]`);
    const eq = rule.indexOf("=");
    if (eq < 0) throw bad("no token name (=<token-name>)");
    const cidr = rule.slice(0, eq).trim();
    const [token, pool, ...more] = rule.slice(eq + 1).split(":");
    if (!token) throw bad("the token name is empty");
    if (more.length) throw bad("more than one ':' after the token name");
    if (pool !== undefined && !DNS1123_LABEL.test(pool)) throw bad(`"${pool}" is not a pool name`);
    const slash = cidr.indexOf("/");
    const at = plainAddress(slash < 0 ? cidr : cidr.slice(0, slash));
    if (!at) throw bad(`"${cidr}" is not an IPv4 or IPv6 address or CIDR`);
    const max = at.family === "ipv4" ? 32 : 128;
    const rawPrefix = slash < 0 ? String(max) : cidr.slice(slash + 1);
    let prefix = /^\d{1,3}$/.test(rawPrefix) ? Number(rawPrefix) : NaN;
    // A v4-mapped CIDR (::ffff:10.0.0.0/104) is the IPv4 one it maps: its prefix counts the mapped bits.
    if (V4_MAPPED.test(slash < 0 ? cidr : cidr.slice(0, slash)) && slash >= 0) prefix -= 96;
    if (!(prefix >= 0 && prefix <= max)) throw bad(`"${cidr}" has a prefix length that is not 0 to ${max}`);
    // As for a member's allowedSourceRanges (src/model/cidr.ts): /0 would hand the token to everyone.
    if (prefix === 0) throw bad(`"${cidr}" admits every address (an open proxy acting as the token)`);
    return { rule, address: at.address, prefix, family: at.family, token, ...(pool && { pool }) };
}

/** The allowed sources, in the order given: the first rule that covers an address wins. */
export class SourceAllowList {
    private readonly lists: { rule: AllowRule; list: net.BlockList }[];

    constructor(rules: AllowRule[]) {
        this.lists = rules.map((rule) => {
            const list = new net.BlockList();
            list.addSubnet(rule.address, rule.prefix, rule.family);
            return { rule, list };
        });
    }

    get size(): number {
        return this.lists.length;
    }

    /** The rule that allows `remoteAddress` (a socket's), if any; an unreadable address matches none. */
    match(remoteAddress: string | undefined): AllowRule | undefined {
        const at = remoteAddress === undefined ? undefined : plainAddress(remoteAddress);
        if (!at) return undefined;
        return this.lists.find(({ rule, list }) => rule.family === at.family && list.check(at.address, at.family))
            ?.rule;
    }
}

/** `<from>-<to>[:<pool>]` (or one port `<n>[:<pool>]`), at most MAX_STICKY_PORTS ports. */
export function parseStickyRange(rule: string): StickyRange {
    const bad = (why: string) => new Error(`"${rule}": ${why}; expected <from>-<to>[:<pool>]`);
    const m = /^(\d{1,5})(?:-(\d{1,5}))?(?::(.*))?$/.exec(rule.trim());
    if (!m) throw bad("not a port range");
    const from = Number(m[1]);
    const to = Number(m[2] ?? m[1]);
    const pool = m[3];
    if (from < 1 || to > 65535) throw bad("ports run from 1 to 65535");
    if (to < from) throw bad(`the range ends (${to}) before it starts (${from})`);
    if (to - from + 1 > MAX_STICKY_PORTS)
        throw bad(`${to - from + 1} ports is more than ${MAX_STICKY_PORTS}: each is a listener and a session`);
    if (pool !== undefined && !DNS1123_LABEL.test(pool)) throw bad(`"${pool}" is not a pool name`);
    return { rule, from, to, ...(pool && { pool }) };
}

/**
 * Refuses sticky ranges that overlap one another or a port another flag uses (`taken`: flag → port,
 * 0 for none). Returns the message of the first clash, or undefined.
 */
export function stickyClash(ranges: StickyRange[], taken: Record<string, number>): string | undefined {
    for (const [i, r] of ranges.entries()) {
        for (const other of ranges.slice(0, i))
            if (r.from <= other.to && other.from <= r.to) return `"${r.rule}" overlaps "${other.rule}"`;
        for (const [flag, port] of Object.entries(taken))
            if (port !== 0 && r.from <= port && port <= r.to) return `"${r.rule}" includes ${flag}'s port ${port}`;
    }
    return undefined;
}

/** The session key of sticky port `port`: the same port is the same session, whoever connects. */
export function stickySession(port: number): string {
    return `port-${port}`;
}

/** Sticky ports by number (a flat lookup: a request's local port is the door it came through). */
export function stickyPorts(ranges: StickyRange[]): Map<number, { session: string; pool?: string }> {
    const ports = new Map<number, { session: string; pool?: string }>();
    for (const r of ranges)
        for (let p = r.from; p <= r.to; p++)
            ports.set(p, { session: stickySession(p), ...(r.pool && { pool: r.pool }) });
    return ports;
}

/**
 * Each allow rule's token must exist (tokens file or EGRESS_TOKENS) and may lease: checked at start,
 * so a typo is a config error then, not a 407 for every browser later.
 */
export function allowProblems(rules: AllowRule[], tokens: StoredToken[]): ConfigProblem[] {
    const problems: ConfigProblem[] = [];
    for (const r of rules) {
        const token = tokens.find((t) => t.name === r.token);
        if (!token)
            problems.push({
                path: "--gateway-allow",
                rule: `"${r.rule}" names token "${r.token}", which is not in the tokens file or EGRESS_TOKENS (known: ${tokens.map((t) => t.name).join(", ")})`,
            });
        else if (!hasScope(token, "lease"))
            problems.push({
                path: "--gateway-allow",
                rule: `"${r.rule}" names token "${r.token}", which lacks the \`lease\` scope the gateway needs`,
            });
    }
    return problems;
}

/** A gateway's doors: which one a client's socket came through (its source address, its local port). */
export class Doors {
    private readonly allowed: SourceAllowList;
    private readonly sticky: ReturnType<typeof stickyPorts>;
    private readonly known = new WeakMap<Socket, Door>();

    constructor(allow: AllowRule[] = [], sticky: StickyRange[] = []) {
        this.allowed = new SourceAllowList(allow);
        this.sticky = stickyPorts(sticky);
    }

    /** The allow rule of the client's address and the session of the port it connected to, if any. */
    of(socket: Socket): Door {
        // A connection's addresses do not change: its door is read once, for its first request.
        let door = this.known.get(socket);
        if (door !== undefined) return door;
        const rule = this.allowed.match(socket.remoteAddress);
        const sticky = socket.localPort === undefined ? undefined : this.sticky.get(socket.localPort);
        door = {
            ...(rule && { allow: { token: rule.token, ...(rule.pool && { pool: rule.pool }) } }),
            ...(sticky && { sticky }),
        };
        this.known.set(socket, door);
        return door;
    }

    /** Whether the client's address is an allowed source. */
    allows(socket: Socket): boolean {
        return this.allowed.match(socket.remoteAddress) !== undefined;
    }
}
