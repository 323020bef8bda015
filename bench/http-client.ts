/**
 * A minimal keep-alive HTTP/1.1 client for benches: one socket, one request in flight, requests written
 * as one buffer, responses framed by Content-Length. node:http's client costs about as much CPU per
 * request as the server does, and on a 2-core machine with both on it, the bench would mostly measure
 * the client. This one does what a crawler's client must (send the request, read status, headers and the
 * whole body) and nothing else. It refuses chunked responses rather than mis-frame them.
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

    private constructor(private readonly host: string, private readonly port: number) {
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
        return Buffer.from(`${method} ${path} HTTP/1.1\r\nHost: ${this.hostHeader}\r\n${headers}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
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
        if (lower.includes("transfer-encoding: chunked")) return this.fail(new Error("RawHttpConnection: chunked responses are not supported"));
        const at = lower.indexOf("content-length:");
        const length = at < 0 ? 0 : parseInt(head.slice(at + 15), 10);
        const total = headEnd + 4 + length;
        if (this.buf.length < total) return;
        if (this.buf.length > total) return this.fail(new Error("RawHttpConnection: bytes after the response (the server pipelined?)"));
        const body = this.buf.toString("utf8", headEnd + 4, total);
        this.buf = Buffer.alloc(0);
        const p = this.pending;
        this.pending = undefined;
        p?.resolve({ status: parseInt(head.slice(9, 12), 10), head, body });
    }
}
