import * as net from "node:net";
import * as tls from "node:tls";
import type { ErrorCode } from "../http/catalogue";
import { rawAnswer } from "./answers";
import { Exchange } from "./exchange";
import { CLIENT_GONE, tagClient, type TaggedSocket } from "./flight";
import { DEFAULT_LIMITS, FramingError, RequestStream, type RequestHead } from "./framing";
import type { GatewayOptions } from "./options";

/**
 * The gateway's HTTP front door at the byte level (issue 34): a forward proxy's listener (absolute-form
 * requests and CONNECT) that reads each connection with the framing layer's strict parser (framing/:
 * where two parsers could read a request two ways, it is refused 400 with `Proxy-Status` and never
 * relayed) instead of node:http. One request at a time per connection: a pipelined request waits,
 * unread, until the answer before it is written. With `tls`, the same over TLS (a client's `--proxy
 * https://…`: its credentials cross the network encrypted). The requests themselves are the gateway's
 * (server.ts).
 */
export interface HttpDoorGateway {
    request(x: Exchange): void;
    /** A CONNECT: its target as the request line named it, the credentials, and the bytes after its head. */
    httpConnect(target: string, proxyAuthorization: string | undefined, socket: net.Socket, rest: Buffer): void;
}

/** A listening door and what shutdown needs of it. */
export interface HttpDoor {
    server: net.Server;
    /** Shutdown: idle connections close now, busy ones after their answer. */
    closeIdle(): void;
}

export function createHttpDoor(
    gw: HttpDoorGateway,
    o: Pick<GatewayOptions, "headersTimeoutMs" | "metrics">,
    sockets: Set<net.Socket>,
    tlsFiles?: { cert: Buffer; key: Buffer },
): HttpDoor {
    // A client gets headersTimeout for each head (then 408); its body and a tunnel may take as long as
    // they need, as through any forward proxy.
    const headersMs = o.headersTimeoutMs ?? 10_000;
    const conns = new Set<ClientConn>();
    const state = { closing: false };
    const serve = (s: TaggedSocket) => {
        tagClient(s);
        const c = new ClientConn(s, gw, o.metrics, headersMs, state);
        conns.add(c);
        s.once("close", () => conns.delete(c));
    };
    const server = tlsFiles
        ? tls.createServer({ cert: tlsFiles.cert, key: tlsFiles.key, handshakeTimeout: headersMs, allowHalfOpen: true })
        : net.createServer({ allowHalfOpen: true, noDelay: true });
    const track = (s: net.Socket) => {
        sockets.add(s);
        s.once("close", () => sockets.delete(s));
    };
    if (tlsFiles) {
        server.on("connection", (s: net.Socket) => s.on("error", () => undefined));
        server.on("secureConnection", (s: TaggedSocket) => {
            track(s);
            serve(s);
        });
        server.on("tlsClientError", (_e: Error, s: net.Socket) => s.destroy());
    } else
        server.on("connection", (s: TaggedSocket) => {
            track(s);
            serve(s);
        });
    return {
        server,
        closeIdle() {
            state.closing = true;
            for (const c of conns) c.closeIfIdle();
        },
    };
}

/** How long a closed connection may take to be closed by its client once its last answer was flushed. */
const LINGER_MS = 2000;

/** What the door answers a request the framing layer refused: 431 for a head over the limit, else 400. */
function framingAnswer(e: FramingError): { code: ErrorCode; message: string } {
    if (e.reason === "head_too_large")
        return {
            code: "headers_too_large",
            message: `the request's headers are over ${DEFAULT_LIMITS.maxHeadBytes} bytes`,
        };
    return { code: "bad_request", message: `not an HTTP request the gateway can read (${e.reason}: ${e.message})` };
}

/** One client connection: its requests read in order, each answered before the next is read. */
class ClientConn {
    private readonly stream: RequestStream;
    private current?: Exchange;
    /** Bytes after the request in flight, read once it is answered. */
    private held?: Buffer;
    private headTimer?: NodeJS.Timeout;
    private clientEnded = false;
    /** No further request is read: the connection is closing, or became a tunnel. */
    private over = false;
    private connectHead?: RequestHead;

    constructor(
        private readonly socket: TaggedSocket,
        private readonly gw: HttpDoorGateway,
        private readonly metrics: GatewayOptions["metrics"],
        private readonly headersMs: number,
        private readonly door: { closing: boolean },
    ) {
        this.stream = new RequestStream(
            {
                head: (h) => this.head(h),
                body: (raw) => this.current?.body(raw),
                end: () => this.current?.requestEnded(),
                tunnel: (rest) => this.tunnel(rest),
            },
            {},
            true,
        );
        socket.on("data", (chunk: Buffer) => this.data(chunk));
        socket.on("end", () => this.clientEnd());
        socket.once("close", () => this.closed());
        this.waitForHead();
    }

    /** The connection has no request in flight: closed now, on shutdown. */
    closeIfIdle(): void {
        if (!this.current && !this.over) this.close();
    }

    /**
     * Ends the connection: no request is read from now on (what the client sends is read and dropped, so
     * its end is seen even while the socket was paused), the answer written goes out, then the socket
     * is destroyed once it is flushed and a linger passed: a client that never closes its side (the door
     * is half-open) does not hold it for ever.
     */
    private close(): void {
        this.over = true;
        clearTimeout(this.headTimer);
        const s = this.socket;
        s.resume();
        if (!s.writableEnded) s.end();
        const destroy = () => setTimeout(() => s.destroy(), LINGER_MS).unref();
        if (s.writableFinished) destroy();
        else s.once("finish", destroy);
    }

    private waitForHead(): void {
        clearTimeout(this.headTimer);
        this.headTimer = setTimeout(() => {
            // A head begun and not finished in time: 408. A connection silent since its last answer: closed.
            if (this.stream.pending) this.refuse("request_timeout", "the request's head did not arrive in time");
            else this.close();
        }, this.headersMs).unref();
    }

    private data(chunk: Buffer): void {
        if (this.over) return;
        if (this.current?.requestDone || this.held) {
            this.held = this.held ? Buffer.concat([this.held, chunk]) : chunk;
            this.socket.pause();
            return;
        }
        this.feed(chunk);
    }

    private feed(chunk: Buffer): void {
        let read: number;
        try {
            read = this.stream.push(chunk);
        } catch (e) {
            if (e instanceof FramingError) return this.malformed(e);
            // The gateway's own fault on this request: answered (or cut), never thrown out of a socket's
            // event, where it would end the process.
            if (this.current) return this.current.cut();
            return this.refuse("internal", "the gateway failed on this request");
        }
        if (read < chunk.length && !this.over) {
            this.held = chunk.subarray(read);
            this.socket.pause();
        }
    }

    private malformed(e: FramingError): void {
        // Inside a request already relayed (its body broke its framing): the member saw part of it, cut both.
        if (this.current) {
            this.over = true;
            // The client's fault, not the member's: its lease is released as a client that went away.
            this.socket[CLIENT_GONE] = true;
            return this.current.cut();
        }
        const a = framingAnswer(e);
        this.refuse(a.code, a.message);
    }

    private refuse(code: ErrorCode, message: string): void {
        this.over = true;
        clearTimeout(this.headTimer);
        if (code !== "internal") this.metrics.refused(code as Parameters<GatewayOptions["metrics"]["refused"]>[0]);
        if (!this.socket.writable) return void this.socket.destroy();
        rawAnswer(this.socket, code, message);
        this.close();
    }

    private head(h: RequestHead): void {
        clearTimeout(this.headTimer);
        // The tunnel event follows, with the bytes after the head.
        if (h.method === "CONNECT") return void (this.connectHead = h);
        const expects = h.fields.some((f) => f.name.toLowerCase() === "expect" && /^100-continue$/i.test(f.value));
        const continued = expects && h.framing.kind !== "none" && h.version === "1.1";
        // As node's server does: the client waits for it before sending its body.
        if (continued) this.socket.write("HTTP/1.1 100 Continue\r\n\r\n");
        this.current = new Exchange(
            h,
            this.socket,
            { done: (close) => this.exchangeDone(close), mayKeepOpen: () => this.mayKeepOpen() },
            continued,
        );
        this.gw.request(this.current);
    }

    private mayKeepOpen(): boolean {
        return !this.door.closing && !this.clientEnded && !this.over;
    }

    private exchangeDone(close: boolean): void {
        this.current = undefined;
        if (close || !this.mayKeepOpen()) {
            this.over = true;
            return this.close();
        }
        this.waitForHead();
        const held = this.held;
        this.held = undefined;
        this.socket.resume();
        if (held) this.feed(held);
    }

    private tunnel(rest: Buffer): void {
        this.over = true;
        clearTimeout(this.headTimer);
        this.socket.pause();
        this.socket.removeAllListeners("data");
        this.socket.removeAllListeners("end");
        const h = this.connectHead!;
        const auth = h.fields.find((f) => f.name.toLowerCase() === "proxy-authorization")?.value;
        this.gw.httpConnect(h.target, auth, this.socket, rest);
    }

    /**
     * The client ended its side. As node's server does (without `httpAllowHalfOpen`), that is the client
     * going away: a request in flight is abandoned (its lease goes back), and the connection closes.
     */
    private clientEnd(): void {
        this.clientEnded = true;
        this.over = true;
        if (this.current) return void this.socket.destroy();
        this.close();
    }

    private closed(): void {
        this.over = true;
        clearTimeout(this.headTimer);
        this.current?.clientGone();
    }
}

/** Listens on `port` at `host` (0: a free port); a failure to listen rejects. */
export async function listenOn(server: net.Server, port: number, host: string): Promise<void> {
    await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
            server.off("error", reject);
            resolve();
        });
    });
}
