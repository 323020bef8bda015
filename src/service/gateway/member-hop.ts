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

export class MemberHops {
    private readonly hops = new Map<string, MemberHop>();

    /** The hop of the member at `url` (`http://user:pass@host:port`). */
    of(url: string): MemberHop {
        let hop = this.hops.get(url);
        if (!hop) {
            const u = new URL(url);
            const user = decodeURIComponent(u.username);
            const pass = decodeURIComponent(u.password);
            hop = {
                host: u.hostname.replace(/^\[(.*)\]$/, "$1"),
                port: Number(u.port || 80),
                authorization: user || pass ? `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}` : undefined,
                agent: new http.Agent({ keepAlive: true }),
            };
            this.hops.set(url, hop);
        }
        return hop;
    }

    /** Closes every kept-alive connection (on shutdown); the hops are made again if used later. */
    destroy(): void {
        for (const hop of this.hops.values()) hop.agent.destroy();
        this.hops.clear();
    }
}
