/**
 * A minimal keep-alive HTTP/1.1 client for benches: one socket, one request in flight, requests written
 * as one buffer, responses framed by Content-Length. node:http's client costs about as much CPU per
 * request as the server does, and on a 2-core machine with both on it, the bench would mostly measure
 * the client. This one does what a crawler's client must (send the request, read status, headers and the
 * whole body, framed by Content-Length or chunked) and nothing else.
 */
import * as net from "node:net";

export interface RawResponse {
    status: number;
    /** Raw header block (status line excluded), for the rare caller that needs a header. */
    head: string;
    body: string;
}

const CRLF2 = Buffer.from("\r\n\r\n");

export class RawHttpConnection {
    private socket!: net.Socket;
    private buf: Buffer = Buffer.alloc(0);
    private pending?: { resolve: (r: RawResponse) => void; reject: (e: Error) => void };
    private readonly hostHeader: string;

    private constructor(
        private readonly host: string,
        private readonly port: number,
    ) {
        this.hostHeader = `${host}:${port}`;
    }

    static async open(host: string, port: number): Promise<RawHttpConnection> {
        const c = new RawHttpConnection(host, port);
        await new Promise<void>((resolve, reject) => {
            c.socket = net.connect({ host, port, noDelay: true }, resolve);
            c.socket.once("error", reject);
        });
        c.socket.on("data", (d: Buffer) => c.onData(d));
        c.socket.on("error", (e) => c.fail(e));
        c.socket.on("close", () => c.fail(new Error("connection closed by the server")));
        return c;
    }

    /** Builds the bytes of a request once; `send` them as often as needed (the fixed lease request). */
    request(method: string, path: string, headers: string, body: string): Buffer {
        return Buffer.from(
            `${method} ${path} HTTP/1.1\r\nHost: ${this.hostHeader}\r\n${headers}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
    }

    send(bytes: Buffer | string): Promise<RawResponse> {
        if (this.pending) return Promise.reject(new Error("RawHttpConnection: one request at a time"));
        return new Promise((resolve, reject) => {
            this.pending = { resolve, reject };
            this.socket.write(bytes);
        });
    }

    close(): void {
        this.socket.removeAllListeners("close");
        this.socket.destroy();
    }

    private fail(e: Error): void {
        const p = this.pending;
        this.pending = undefined;
        p?.reject(e);
    }

    private onData(d: Buffer): void {
        this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
        const headEnd = this.buf.indexOf(CRLF2);
        if (headEnd < 0) return;
        const head = this.buf.toString("latin1", 0, headEnd);
        const lower = head.toLowerCase();
        let body: string;
        let total: number;
        if (lower.includes("transfer-encoding: chunked")) {
            let framed: ReturnType<typeof dechunk>;
            try {
                framed = dechunk(this.buf, headEnd + 4);
            } catch (e) {
                return this.fail(e as Error);
            }
            if (!framed) return;
            ({ body, total } = framed);
        } else {
            const at = lower.indexOf("content-length:");
            total = headEnd + 4 + (at < 0 ? 0 : parseInt(head.slice(at + 15), 10));
            if (this.buf.length < total) return;
            body = this.buf.toString("utf8", headEnd + 4, total);
        }
        if (this.buf.length > total)
            return this.fail(new Error("RawHttpConnection: bytes after the response (the server pipelined?)"));
        this.buf = Buffer.alloc(0);
        const p = this.pending;
        this.pending = undefined;
        p?.resolve({ status: parseInt(head.slice(9, 12), 10), head, body });
    }
}

/** A chunked body starting at `from`, or undefined until all of it (and the final CRLF) has arrived. Trailers are not supported. */
function dechunk(buf: Buffer, from: number): { body: string; total: number } | undefined {
    const parts: Buffer[] = [];
    for (let at = from; ;) {
        const eol = buf.indexOf("\r\n", at, "latin1");
        if (eol < 0) return undefined;
        const size = parseInt(buf.toString("latin1", at, eol), 16);
        if (!Number.isFinite(size)) throw new Error("RawHttpConnection: bad chunk size");
        const end = eol + 2 + size + 2;
        if (buf.length < end) return undefined;
        if (size === 0) return { body: Buffer.concat(parts).toString("utf8"), total: end };
        parts.push(buf.subarray(eol + 2, eol + 2 + size));
        at = end;
    }
}
