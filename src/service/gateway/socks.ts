import * as net from "node:net";
import type { Logger } from "pino";
import type { Refusal } from "./admission";
import type { TunnelFailure, TunnelFront, TunnelRequest } from "./forward-connect";
import { tagClient, type TaggedSocket } from "./flight";
import type { GatewayMetrics } from "../observe/gateway-metrics";
import {
    MAX_HANDSHAKE,
    METHOD_NONE,
    METHOD_USERPASS,
    NO_ACCEPTABLE_METHOD,
    type Read,
    readAuth,
    readGreeting,
    readRequest,
    REPLY,
    type ReplyCode,
    reply,
} from "./socks-protocol";

/**
 * The gateway's SOCKS5 front door (`egress serve --socks-port`): RFC 1928 CONNECT with RFC 1929
 * username/password, where the username and password are the HTTP gateway's proxy username and token.
 * The handshake is read here (socks-protocol.ts); the tunnel is the gateway's own (Gateway.connect):
 * the same admission, leases, politeness, retries, outcomes and metrics (kind `connect`) as an HTTP
 * CONNECT. Hostile input (another version, a truncated or oversized message, a slow handshake) ends the
 * connection, with a reply where the RFC has one; the handshake has a deadline and a bounded buffer.
 */

/** What the front needs of the gateway. */
export interface SocksGateway {
    connect(t: TunnelRequest): void;
    /** The credentials alone: undefined when they are good (admission.ts). */
    credentials(username: string, password: string): Refusal | undefined;
    /** Whether the client's address is an allowed source (`--gateway-allow`), which needs no login. */
    allows(socket: net.Socket): boolean;
}

/** The reply for a refusal before any member was tried: a rule said no (0x02), or nothing could serve it (0x01). */
export function refusalReply(code: Refusal["code"]): ReplyCode {
    if (code === "not_ready" || code === "none_available" || code === "store_unavailable" || code === "bad_request")
        return REPLY.generalFailure;
    return REPLY.notAllowed;
}

/**
 * The reply for a tunnel that did not open, from what the member answered: its rules forbid the target
 * (403), the target refused it or is not found (proxy-chain's 594, 593), or timed out (504);
 * otherwise the member itself failed or could not be reached (0x01).
 */
export function tunnelReply(why: TunnelFailure): ReplyCode {
    const s = why.memberStatus;
    if (s === 403) return REPLY.notAllowed;
    if (s === 594) return REPLY.connectionRefused;
    if (s === 593 || s === 404) return REPLY.hostUnreachable;
    if (s === 504) return REPLY.hostUnreachable;
    return REPLY.generalFailure;
}

export const SOCKS_TUNNEL_FRONT: TunnelFront = {
    opened: (client) => void client.write(reply(REPLY.succeeded)),
    failed: (client, why) => void client.end(reply(tunnelReply(why))),
};

export interface SocksFrontOptions {
    gateway: SocksGateway;
    metrics: GatewayMetrics;
    log: Logger;
    /** How long a client has for its whole handshake (greeting, authentication, request). */
    handshakeMs: number;
}

/** Serves one SOCKS5 connection's handshake, then hands its CONNECT to the gateway. */
export function socksHandshake(socket: TaggedSocket, o: SocksFrontOptions): void {
    new SocksHandshake(socket, o);
}

/** One connection's handshake: greeting, RFC 1929 login, request, read as they arrive (socks-protocol.ts). */
class SocksHandshake {
    /** What arrived and is not read yet. */
    private got: Buffer = Buffer.alloc(0);
    private stage: "greeting" | "auth" | "request" = "greeting";
    private credentials = { username: "", password: "" };
    private done = false;
    private readonly deadline: NodeJS.Timeout;
    private readonly onReadable = () => this.read();

    constructor(
        private readonly socket: TaggedSocket,
        private readonly o: SocksFrontOptions,
    ) {
        this.deadline = setTimeout(
            () => this.refuse("request_timeout", `the handshake did not complete in ${o.handshakeMs} ms`),
            o.handshakeMs,
        ).unref();
        socket.once("close", () => {
            if (this.done) return;
            this.finish();
            // Gone mid-handshake: a client that said something and left counts as a bad request.
            if (this.got.length > 0 || this.stage !== "greeting") o.metrics.refused("bad_request");
        });
        socket.on("readable", this.onReadable);
    }

    private read(): void {
        let chunk: Buffer | null;
        while (!this.done && (chunk = this.socket.read() as Buffer | null) !== null) {
            this.got = this.got.length === 0 ? chunk : Buffer.concat([this.got, chunk]);
            if (this.got.length > MAX_HANDSHAKE)
                return this.refuse("bad_request", `a handshake of more than ${MAX_HANDSHAKE} bytes`);
            while (!this.done && this.step());
        }
    }

    /** One step of the handshake on what arrived so far; false: wait for more bytes (or it is over). */
    private step(): boolean {
        if (this.stage === "greeting") return this.greeting();
        if (this.stage === "auth") return this.login();
        this.request();
        return false;
    }

    private greeting(): boolean {
        const g = readGreeting(this.got);
        if (!this.consumed(g)) return false;
        // A client that offers a login uses it (its credentials win); an allowed source may offer none.
        if (
            !g.methods.includes(METHOD_USERPASS) &&
            g.methods.includes(METHOD_NONE) &&
            this.o.gateway.allows(this.socket)
        ) {
            this.socket.write(Buffer.from([5, METHOD_NONE]));
            this.stage = "request";
            return true;
        }
        if (!g.methods.includes(METHOD_USERPASS)) {
            const none = Buffer.from([5, NO_ACCEPTABLE_METHOD]);
            this.refuse("unauthenticated", "the client offers no username/password method", none);
            return false;
        }
        this.socket.write(Buffer.from([5, METHOD_USERPASS]));
        this.stage = "auth";
        return true;
    }

    private login(): boolean {
        const a = readAuth(this.got);
        if (!this.consumed(a)) return false;
        const refused = this.o.gateway.credentials(a.username, a.password);
        if (refused) {
            // RFC 1929: a non-zero status, then the connection closes. The reason goes to the log only.
            this.finish();
            this.o.log.debug({ code: refused.code, why: refused.message }, "SOCKS5 authentication refused");
            this.socket.end(Buffer.from([1, 1]));
            return false;
        }
        this.credentials = { username: a.username, password: a.password };
        this.socket.write(Buffer.from([1, 0]));
        this.stage = "request";
        return true;
    }

    private request(): void {
        const r = readRequest(this.got);
        if (!this.consumed(r)) return;
        this.finish();
        const socket = this.socket;
        this.o.gateway.connect({
            socket,
            credentials: { ok: true, ...this.credentials },
            host: r.host,
            port: r.port,
            // What the client sent past its request (optimistic data) opens the tunnel.
            head: this.got,
            front: SOCKS_TUNNEL_FRONT,
            internal: () => void socket.end(reply(REPLY.generalFailure)),
            refuse: (x) => {
                this.o.log.debug({ code: x.code, why: x.message }, "SOCKS5 CONNECT refused");
                if (socket.writable) socket.end(reply(refusalReply(x.code)));
                else socket.destroy();
            },
        });
    }

    /** A message read whole (its bytes leave `got`), a message that is not one (refused), or not yet. */
    private consumed<T>(m: Read<T>): m is { ok: true; used: number } & T {
        if (m === undefined) return false;
        if (!m.ok) {
            this.refuse("bad_request", m.why, m.reply === undefined ? undefined : reply(m.reply));
            return false;
        }
        this.got = this.got.subarray(m.used);
        return true;
    }

    /** The handshake is over: no deadline, and the socket's bytes are no longer read here. */
    private finish(): void {
        this.done = true;
        clearTimeout(this.deadline);
        this.socket.off("readable", this.onReadable);
    }

    /** Ends a handshake that cannot go on, with `answer` (a reply) if the RFC has one for it. */
    private refuse(code: "bad_request" | "request_timeout" | "unauthenticated", why: string, answer?: Buffer): void {
        this.finish();
        this.o.metrics.refused(code);
        this.o.log.debug({ stage: this.stage, why }, "SOCKS5 handshake refused");
        if (answer && this.socket.writable) this.socket.end(answer);
        else this.socket.destroy();
    }
}

/** The SOCKS5 listener: every connection's handshake, then the gateway's tunnel. */
export function createSocksServer(o: SocksFrontOptions, sockets: Set<net.Socket>): net.Server {
    return net.createServer((s: TaggedSocket) => {
        sockets.add(s);
        s.once("close", () => sockets.delete(s));
        s.setNoDelay(true);
        tagClient(s);
        socksHandshake(s, o);
    });
}
