import * as net from "node:net";

/**
 * Where the gateway sends a leased member's traffic: its address, the `Proxy-Authorization` its
 * credentials make (members ask for them; the client's own never go upstream), and the member's idle
 * connections, so consecutive requests through a member reuse a connection instead of paying a TCP
 * handshake each. Parsed once per member URL, not per request.
 */
export interface MemberHop {
    host: string;
    port: number;
    authorization?: string;
    conns: MemberConnections;
}

/**
 * How long a member connection may sit idle. A member's own `Keep-Alive: timeout=N` lowers it to N − 1 s:
 * a connection the member is about to close must not carry the next request, which would fail with
 * ECONNRESET and be charged to the member (issue 34). Only idle connections are closed by it.
 */
export const MEMBER_IDLE_MS = 30_000;

/** How often hops unused since the last look are dropped: members come and go (autoscaling, heals). */
const SWEEP_MS = 5 * 60_000;

/**
 * What a member connection's events go to while it is in use: the attempt relaying on it (relay-http.ts).
 * Each connection has its listeners from the start and for its life, calling its user of the moment
 * (the attempt, or the pool's idle watch): handing a connection on is one assignment, not a round of
 * listeners removed and added for every request.
 */
export interface MemberUse {
    data(chunk: Buffer): void;
    end(): void;
    error(err: NodeJS.ErrnoException): void;
    close(): void;
}

const USE = Symbol("egress.gateway.memberUse");
const IDLE = Symbol("egress.gateway.memberIdle");
const IDLE_UNTIL = Symbol("egress.gateway.memberIdleUntil");
type MemberSocket = net.Socket & { [USE]?: MemberUse; [IDLE]: MemberUse; [IDLE_UNTIL]: number };

/** Idle connections to one member, most recently used first out (the warmest, least likely to be closing). */
export class MemberConnections {
    private readonly idle: MemberSocket[] = [];
    /** Connections handed out and not given back: a sweep keeps the hop of a member still in use. */
    busy = 0;
    /** Shut down: a connection given back is closed, not kept. */
    private closed = false;
    /** Closes idle connections past their time; armed while any wait. */
    private timer?: NodeJS.Timeout;

    constructor(
        private readonly host: string,
        private readonly port: number,
    ) {}

    /** An idle connection, or a new one (still connecting: `socket.connecting`), its events going to `use`. */
    take(use: MemberUse): net.Socket {
        this.busy++;
        const now = performance.now();
        for (let s = this.idle.pop(); s !== undefined; s = this.idle.pop()) {
            // Past its idle time (the sweep has not come by yet): the member may be closing it.
            if (s[IDLE_UNTIL] <= now) {
                this.close(s);
                continue;
            }
            s[USE] = use;
            return s;
        }
        const fresh = this.connect();
        fresh[USE] = use;
        return fresh;
    }

    private connect(): MemberSocket {
        const s = net.connect({ host: this.host, port: this.port }) as MemberSocket;
        s.setNoDelay(true);
        // While idle, a member that closes the connection, or sends anything on it, ends it here.
        const drop = () => {
            const i = this.idle.indexOf(s);
            if (i >= 0) this.idle.splice(i, 1);
            this.close(s);
        };
        s[IDLE] = { data: drop, end: drop, error: drop, close: drop };
        s[IDLE_UNTIL] = 0;
        s.on("data", (chunk: Buffer) => s[USE]?.data(chunk));
        s.on("end", () => s[USE]?.end());
        s.on("error", (err: NodeJS.ErrnoException) => s[USE]?.error(err));
        s.on("close", () => s[USE]?.close());
        return s;
    }

    /** Closes `s`, its events going nowhere from now on. */
    private close(s: MemberSocket): void {
        s[USE] = undefined;
        s.destroy();
    }

    /**
     * Gives back a connection whose last answer ended cleanly, to wait idle for the next request up to
     * `idleMs`; `reusable` false (the member closes it, or it is out of step): destroyed instead.
     */
    give(socket: net.Socket, reusable: boolean, idleMs = MEMBER_IDLE_MS): void {
        const s = socket as MemberSocket;
        this.busy--;
        // A request body's writer may still wait for this connection's drain (exchange.ts): not the next user's.
        if (s.listenerCount("drain") > 0) s.removeAllListeners("drain");
        // idleMs 0: the member closes idle connections within a second (`timeout=1`): not worth keeping.
        if (!reusable || idleMs <= 0 || s.destroyed || !s.writable || this.closed) return this.close(s);
        s[USE] = s[IDLE];
        s[IDLE_UNTIL] = performance.now() + idleMs;
        s.resume();
        this.idle.push(s);
        if (this.timer === undefined) this.timer = setTimeout(() => this.sweep(), idleMs).unref();
    }

    /** Closes the idle connections past their time, and comes back for the earliest of the others. */
    private sweep(): void {
        this.timer = undefined;
        const now = performance.now();
        let next = Infinity;
        for (const s of [...this.idle])
            if (s[IDLE_UNTIL] <= now) s[IDLE].close();
            else next = Math.min(next, s[IDLE_UNTIL]);
        if (next !== Infinity) this.timer = setTimeout(() => this.sweep(), next - now).unref();
    }

    get idleCount(): number {
        return this.idle.length;
    }

    destroy(): void {
        this.closed = true;
        clearTimeout(this.timer);
        this.timer = undefined;
        for (const s of this.idle.splice(0)) this.close(s);
    }
}

/** The idle time a member's `Keep-Alive: timeout=N` allows (N − 1 s, as node's agent reads it), capped at MEMBER_IDLE_MS. */
export function memberIdleMs(keepAlive: string | undefined): number {
    const m = keepAlive ? /(?:^|[\s,;])timeout\s*=\s*(\d+)/i.exec(keepAlive) : null;
    if (!m) return MEMBER_IDLE_MS;
    return Math.max(0, Math.min(MEMBER_IDLE_MS, (Number(m[1]) - 1) * 1000));
}

export class MemberHops {
    private readonly hops = new Map<string, MemberHop>();
    /** Hops used since the last sweep. */
    private readonly used = new Set<string>();
    private readonly sweeper = setInterval(() => this.sweep(), SWEEP_MS).unref();

    /** The hop of the member at `url` (`http://user:pass@host:port`). */
    of(url: string): MemberHop {
        let hop = this.hops.get(url);
        this.used.add(url);
        if (!hop) {
            const u = new URL(url);
            const user = decodeURIComponent(u.username);
            const pass = decodeURIComponent(u.password);
            const host = u.hostname.replace(/^\[(.*)\]$/, "$1");
            const port = Number(u.port || 80);
            hop = {
                host,
                port,
                authorization: user || pass ? `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}` : undefined,
                conns: new MemberConnections(host, port),
            };
            this.hops.set(url, hop);
        }
        return hop;
    }

    /** Drops the hops of members not used for a sweep interval and holding no connection in use. */
    private sweep(): void {
        for (const [url, hop] of this.hops)
            if (!this.used.has(url) && hop.conns.busy === 0) {
                hop.conns.destroy();
                this.hops.delete(url);
            }
        this.used.clear();
    }

    /** Closes every idle connection (on shutdown); the hops are made again if used later. */
    destroy(): void {
        clearInterval(this.sweeper);
        for (const hop of this.hops.values()) hop.conns.destroy();
        this.hops.clear();
    }
}
