/**
 * What the rotating gateway is built with (GatewayOptions) and its defaults. Separate from server.ts
 * (the listener and the request path) so the start-up and tests that configure a gateway read its knobs
 * without the forwarding code.
 */
import type { Logger } from "pino";
import type { StoredToken } from "../http/auth";
import type { Fleet } from "../fleet/fleet";
import type { GatewayMetrics } from "../observe/gateway-metrics";
import type { BlockRules } from "./outcome";
import type { ProtectedEndpoint } from "./protected-targets";
import type { AllowRule, StickyRange } from "./doors";

/** How long a gateway request waits for a busy pool by default: a few seconds, then 503 + Retry-After. */
export const DEFAULT_GATEWAY_WAIT_MS = 5000;

export interface GatewayOptions {
    /** @default 127.0.0.1 */
    host?: string;
    /** The plain HTTP proxy's port; 0 picks a free port; undefined: no plain HTTP front door. */
    port?: number;
    /** The SOCKS5 front door's port (socks.ts), on `host` too; 0 picks a free port; undefined: none. */
    socksPort?: number;
    /** The HTTP proxy over TLS (http-front.ts), on `host` too, serving `tls`; 0 picks a free port; undefined: none. */
    tlsPort?: number;
    /** The certificate (chain) and key the TLS port serves; replaced by `Gateway.setSecureContext`. */
    tls?: { cert: Buffer; key: Buffer };
    /**
     * Sources that need no credentials (`--gateway-allow`): each acts as its named token, which must be
     * in `tokens` (doors.ts). Nothing is allowed unless named, loopback included. @default []
     */
    allow?: AllowRule[];
    /** Sticky ports (`--gateway-sticky-ports`), on `host`: each port one session `port-<n>` (doors.ts). @default [] */
    stickyPorts?: StickyRange[];
    fleet: Fleet;
    tokens: StoredToken[];
    metrics: GatewayMetrics;
    log: Logger;
    /** Not ready (starting, stopping): every request is answered 503 not_ready. */
    ready: () => { ok: true } | { ok: false; reason: string };
    blockRules?: BlockRules;
    /**
     * Lease TTL of a gateway request: a request or tunnel still open after it is cut, so its member can
     * never be in two leases at once. @default 3600 (the lease manager's maximum)
     */
    leaseTtlSeconds?: number;
    /** Never relayed to (protected-targets.ts): the lease store. The gateway adds its own port itself. */
    protectedTargets?: ProtectedEndpoint[];
    /**
     * How long a request waits for a member when every one it could use is busy, first come first
     * served (waiting.ts); then 503 with Retry-After. 0 = answer 503 at once. @default 5000
     */
    waitMs?: number;
    /** Most requests waiting at once. @default 1000 */
    maxWaiting?: number;
    /**
     * How long a client has to send its request head (then 408 request_timeout), or its whole SOCKS5
     * handshake (then the connection closes). @default 10000
     */
    headersTimeoutMs?: number;
    /**
     * How long a member may take to send its answer's head (plain HTTP) or answer a CONNECT before the
     * attempt fails 504 `member_timeout` (and may be retried on another member). @default 30000
     */
    memberAnswerMs?: number;
}

/** Where the gateway's front doors listen (each only when configured). */
export interface GatewayAddresses {
    port?: number;
    url?: string;
    socksPort?: number;
    /** `socks5h://host:port`: the client sends host names, the members resolve them. */
    socksUrl?: string;
    tlsPort?: number;
    /** `https://host:port`: the proxy URL of the TLS port. */
    tlsUrl?: string;
    /** The sticky port ranges listening. */
    sticky?: { from: number; to: number; pool?: string }[];
}
