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

/** Idle connections to one member, most recently used first out (the warmest, least likely to be closing). */
export class MemberConnections {
    private readonly idle: net.Socket[] = [];
    /** Connections handed out and not given back: a sweep keeps the hop of a member still in use. */
    busy = 0;
    /** Shut down: a connection given back is closed, not kept. */
    private closed = false;

    constructor(
        private readonly host: string,
        private readonly port: number,
    ) {}

    /** An idle connection, or a new one (still connecting: `socket.connecting`). */
    take(): net.Socket {
        this.busy++;
        const s = this.idle.pop();
        if (s) {
            s.setTimeout(0);
            forget(s);
            return s;
        }
        const fresh = net.connect({ host: this.host, port: this.port });
        fresh.setNoDelay(true);
        return fresh;
    }

    /**
     * Gives back a connection whose last answer ended cleanly, to wait idle for the next request up to
     * `idleMs`; `reusable` false (the member closes it, or it is out of step): destroyed instead.
     */
    give(s: net.Socket, reusable: boolean, idleMs = MEMBER_IDLE_MS): void {
        this.busy--;
        // idleMs 0: the member closes idle connections within a second (`timeout=1`): not worth keeping.
        if (!reusable || idleMs <= 0 || s.destroyed || !s.writable || this.closed) return void s.destroy();
        forget(s);
        const drop = () => {
            const i = this.idle.indexOf(s);
            if (i >= 0) this.idle.splice(i, 1);
            s.destroy();
        };
        // A member that closes an idle connection, or sends anything on it, ends it here.
        s.once("close", drop);
        s.on("error", drop);
        s.once("data", drop);
        s.once("end", drop);
        s.setTimeout(idleMs, drop);
        s.resume();
        this.idle.push(s);
    }

    get idleCount(): number {
        return this.idle.length;
    }

    destroy(): void {
        this.closed = true;
        for (const s of this.idle.splice(0)) s.destroy();
    }
}

/** Removes the listeners of the connection's last user (a relay's, or the idle watch's): the next one brings its own. */
function forget(s: net.Socket): void {
    for (const event of ["data", "end", "close", "error", "timeout", "connect", "drain"]) s.removeAllListeners(event);
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
