/**
 * HTTP/1.1 over a raw socket, just enough for the bench's CONNECT rows: a tunnel through a proxy and
 * GETs inside it. The origin always answers with Content-Length, so an answer ends where its body does.
 */
import * as net from "node:net";

/** No answer in this long: the exchange fails (status 0) rather than hang the run. */
const IDLE_MS = 10_000;

/** A socket's bytes as answers: `answer()` waits for the next whole one and gives its status (0: the socket ended). */
export class Wire {
    private buf: Buffer = Buffer.alloc(0);
    private wake?: () => void;
    private ended = false;

    constructor(readonly socket: net.Socket) {
        socket.setNoDelay(true);
        socket.setTimeout(IDLE_MS, () => socket.destroy());
        socket.on("data", (d: Buffer) => {
            this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
            this.wake?.();
        });
        const end = () => {
            this.ended = true;
            this.wake?.();
        };
        socket.on("end", end).on("close", end).on("error", end);
    }

    /** The next answer's status; `headOnly`: an answer to CONNECT (no body follows its head). */
    async answer(headOnly = false): Promise<number> {
        for (;;) {
            const n = answerLength(this.buf, headOnly);
            if (n >= 0) {
                const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(this.buf.toString("latin1", 0, 16))?.[1] ?? 0);
                this.buf = this.buf.subarray(n);
                return status;
            }
            if (this.ended) return 0;
            await new Promise<void>((r) => (this.wake = r));
            this.wake = undefined;
        }
    }

    /** One GET of `path` from `host` on this (tunnelled) connection. */
    get(host: string, path: string): Promise<number> {
        this.socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
        return this.answer();
    }

    close(): void {
        this.socket.destroy();
    }
}

/** Bytes of the first whole answer in `buf` (head, and its Content-Length body unless `headOnly`); -1: not all there. */
export function answerLength(buf: Buffer, headOnly: boolean): number {
    const h = buf.indexOf("\r\n\r\n");
    if (h < 0) return -1;
    if (headOnly) return h + 4;
    const len = Number(/\r\ncontent-length: *(\d+)/i.exec(buf.toString("latin1", 0, h))?.[1] ?? 0);
    return buf.length >= h + 4 + len ? h + 4 + len : -1;
}

/** A CONNECT to `target` through the proxy on `proxyPort`: the open tunnel, or the status that refused it (0: no answer). */
export async function openTunnel(proxyPort: number, target: string, auth?: string): Promise<Wire | number> {
    const socket = net.connect(proxyPort, "127.0.0.1");
    const wire = new Wire(socket);
    const head = [`CONNECT ${target} HTTP/1.1`, `Host: ${target}`, ...(auth ? [`Proxy-Authorization: ${auth}`] : [])];
    socket.write(`${head.join("\r\n")}\r\n\r\n`);
    const status = await wire.answer(true);
    if (status === 200) return wire;
    wire.close();
    return status;
}
