import * as http from "node:http";

/**
 * Where the gateway sends a leased member's traffic: its address, the `Proxy-Authorization` its
 * credentials make (members ask for them; the client's own never go upstream), and one keep-alive
 * agent per member, so consecutive requests through a member reuse a connection instead of paying a
 * TCP handshake each. Parsed once per member URL, not per request.
 */
export interface MemberHop {
    host: string;
    port: number;
    authorization?: string;
    agent: http.Agent;
}

/**
 * How long a member connection may sit idle in its agent. Also what lets the member's own `Keep-Alive:
 * timeout=N` count: Node's agent takes the hint (minus a second) only to *lower* its own timeout, so
 * with none (the default, 0) it ignored it, kept sockets the member was about to close, and a request
 * sent on one as it closed failed with ECONNRESET, charged to the member (issue 34). In-flight requests
 * are not cut by it: the agent destroys only idle sockets on timeout.
 */
const MEMBER_IDLE_MS = 30_000;

/** How often hops unused since the last look are dropped: members come and go (autoscaling, heals). */
const SWEEP_MS = 5 * 60_000;

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
            hop = {
                host: u.hostname.replace(/^\[(.*)\]$/, "$1"),
                port: Number(u.port || 80),
                authorization: user || pass ? `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}` : undefined,
                agent: new http.Agent({ keepAlive: true, timeout: MEMBER_IDLE_MS }),
            };
            this.hops.set(url, hop);
        }
        return hop;
    }

    /** Drops the hops of members not used for a sweep interval and holding no connection in use. */
    private sweep(): void {
        for (const [url, hop] of this.hops)
            if (!this.used.has(url) && Object.keys(hop.agent.sockets).length === 0) {
                hop.agent.destroy();
                this.hops.delete(url);
            }
        this.used.clear();
    }

    /** Closes every kept-alive connection (on shutdown); the hops are made again if used later. */
    destroy(): void {
        clearInterval(this.sweeper);
        for (const hop of this.hops.values()) hop.agent.destroy();
        this.hops.clear();
    }
}
