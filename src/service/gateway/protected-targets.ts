/**
 * Addresses the gateway never relays to: the lease store (a Redis on loopback holds every lease, session
 * and block; a crawler holding only a lease token must not reach it) and the gateway's own port (a
 * request to itself would lease a second member for nothing). A local member runs on this machine, so a
 * CONNECT to `127.0.0.1:<store port>` through it would reach the store: the check is by port, and by
 * host as "this machine" (loopback, unspecified, any address of a local interface, or a name that
 * resolves to one), or the endpoint's own host name.
 *
 * The service's API is not on the list: crawlers call it directly (leases, discovery), and what a token
 * may do there is its scopes' business, through the gateway or not (docs/decisions/0047-protected-targets.md).
 */
import * as dns from "node:dns/promises";
import * as net from "node:net";
import * as os from "node:os";

export interface ProtectedEndpoint {
    /** What it is, for the refusal's message: "the lease store". */
    what: string;
    host: string;
    port: number;
}

/** A host name or literal that always means this machine. */
function localLiteral(host: string): boolean {
    const h = host.replace(/^\[|\]$/g, "").toLowerCase();
    if (h === "localhost" || h.endsWith(".localhost")) return true;
    if (net.isIPv4(h)) return h.startsWith("127.") || h === "0.0.0.0";
    if (net.isIPv6(h)) return h === "::1" || h === "::" || /^::ffff:127\./.test(h) || h === "::ffff:0.0.0.0";
    return false;
}

/** This machine's interface addresses, read per check (interfaces come and go; the list is short). */
function interfaceAddresses(): Set<string> {
    const out = new Set<string>();
    for (const list of Object.values(os.networkInterfaces()))
        for (const a of list ?? []) out.add(a.address.toLowerCase());
    return out;
}

export class ProtectedTargets {
    private readonly endpoints: ProtectedEndpoint[] = [];

    constructor(endpoints: readonly ProtectedEndpoint[] = []) {
        for (const e of endpoints) this.add(e);
    }

    add(e: ProtectedEndpoint): void {
        this.endpoints.push({ ...e, host: e.host.replace(/^\[|\]$/g, "").toLowerCase() });
    }

    /** True when some endpoint listens on `port`: only then is a target worth `refusal`'s lookup. */
    guards(port: number): boolean {
        return this.endpoints.some((e) => e.port === port);
    }

    /**
     * Why `host:port` may not be relayed to, or undefined when it may. Only a target on a protected port
     * costs a name lookup, so ordinary traffic pays nothing.
     */
    async refusal(host: string, port: number): Promise<string | undefined> {
        const matches = this.endpoints.filter((e) => e.port === port);
        if (matches.length === 0) return undefined;
        const h = host.replace(/^\[|\]$/g, "").toLowerCase();
        const hit = matches.find((e) => e.host === h) ?? ((await this.isThisMachine(h)) ? matches[0] : undefined);
        return hit && `${host}:${port} is ${hit.what} (or this machine on its port): the gateway does not relay there`;
    }

    /**
     * Hands a request on (`go`) unless its target is protected (`refuse` with why). Ordinary targets are
     * handed on at once; a target on a protected port waits for the check.
     */
    guard(host: string, port: number, refuse: (reason: string) => void, go: () => void): void {
        if (!this.guards(port)) return go();
        void this.refusal(host, port).then((reason) => (reason ? refuse(reason) : go()));
    }

    private async isThisMachine(host: string): Promise<boolean> {
        if (localLiteral(host)) return true;
        const mine = interfaceAddresses();
        if (net.isIP(host)) return mine.has(host);
        // A name: what it resolves to now. One that does not resolve is not ours (the member fails it).
        const addrs = await dns.lookup(host, { all: true }).catch(() => []);
        return addrs.some((a) => localLiteral(a.address) || mine.has(a.address.toLowerCase()));
    }
}
