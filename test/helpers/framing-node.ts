/**
 * Verdicts on raw HTTP/1.1 bytes, from node:http (llhttp, strict: the gateway's front door today) and
 * from the gateway's framing layer (src/service/gateway/framing), in one shape so a test can compare
 * them. Requests go to a real `http.createServer` on 127.0.0.1 from a raw `net` client; responses come
 * from a raw `net` server to `http.request`. Inputs run one at a time, each on its own connection.
 */
import * as http from "node:http";
import * as net from "node:net";
import { RequestStream, ResponseStream, type Field } from "../../src/service/gateway/framing";

/** One request as a server saw it; `body` is its content (chunk data), latin1. */
export interface SeenRequest {
    method: string;
    target: string;
    version: string;
    headers: string[];
    body: string;
    complete: boolean;
}

/** A connection's requests, and how it ended: after its last request, refused at some byte, or as a tunnel. */
export interface RequestVerdict {
    requests: SeenRequest[];
    end: "clean" | "refused" | "tunnel";
}

/**
 * One answer as a client saw it: 1xx statuses, the final head, the content, and whether it was read
 * whole (`complete`), whole but followed by bytes the connection should not have carried (`extra`: not
 * reusable), or `refused`.
 */
export interface ResponseVerdict {
    interim: number[];
    status?: number;
    headers?: string[];
    body: string;
    outcome: "complete" | "extra" | "refused";
}

const flat = (fields: readonly Field[]) => fields.flatMap((f) => [f.name, f.value]);
const text = (parts: Buffer[]) => Buffer.concat(parts).toString("latin1");
const tick = () => new Promise<void>((r) => setImmediate(r));

/** The framing layer's verdict on a client's bytes, delivered as `chunks`. */
export function ourRequestVerdict(chunks: readonly Buffer[]): RequestVerdict {
    const requests: SeenRequest[] = [];
    const body: Buffer[] = [];
    let end: RequestVerdict["end"] = "clean";
    const stream = new RequestStream({
        head: (h) => {
            body.length = 0;
            requests.push({ ...pick(h), headers: flat(h.fields), body: "", complete: false });
        },
        content: (d) => void body.push(Buffer.from(d)),
        end: () => Object.assign(requests[requests.length - 1], { body: text(body), complete: true }),
        tunnel: () => {
            end = "tunnel";
            requests[requests.length - 1].complete = true;
        },
    });
    try {
        for (const c of chunks) stream.push(c);
        stream.finish();
    } catch {
        end = "refused";
        const last = requests[requests.length - 1];
        if (last && !last.complete) last.body = text(body);
    }
    return { requests, end };
}

function pick(h: { method: string; target: string; version: string }) {
    return { method: h.method, target: h.target, version: h.version };
}

/** The framing layer's verdict on a member's answer to `method`, delivered as `chunks`. */
export function ourResponseVerdict(method: string, chunks: readonly Buffer[]): ResponseVerdict {
    const v: ResponseVerdict = { interim: [], body: "", outcome: "refused" };
    const body: Buffer[] = [];
    const stream = new ResponseStream(method, {
        head: (h) => {
            if (h.interim) v.interim.push(h.status);
            else Object.assign(v, { status: h.status, headers: flat(h.fields) });
        },
        content: (d) => void body.push(Buffer.from(d)),
        end: () => undefined,
    });
    try {
        for (const c of chunks) stream.push(c);
        stream.finish();
        v.outcome = stream.extra > 0 ? "extra" : "complete";
    } catch {
        v.outcome = stream.done ? "extra" : "refused";
    }
    v.body = text(body);
    return v;
}

/** How `bytes` is cut for the incremental parsers: whole, one byte at a time, and in two at every boundary (sampled past 2 KiB). */
export function chunkings(bytes: Buffer): Buffer[][] {
    const out: Buffer[][] = [[bytes], [...bytes].map((b) => Buffer.from([b]))];
    const n = bytes.length;
    for (let k = 1; k < n; k++)
        if (n <= 2048 || k < 300 || k > n - 300 || k % 97 === 0) out.push([bytes.subarray(0, k), bytes.subarray(k)]);
    return out;
}

/** Writes `bytes` on `socket` whole, or one byte per event-loop turn (a slowloris client or member). */
async function send(socket: net.Socket, bytes: Buffer, slow: boolean): Promise<void> {
    socket.setNoDelay(true);
    if (!slow) return void socket.end(bytes);
    for (const b of bytes) {
        if (socket.destroyed) return;
        socket.write(Buffer.from([b]));
        await tick();
    }
    socket.end();
}

/** node:http's server verdicts: one connection per input, closed by the client after its bytes. */
export async function nodeRequestVerdicts(inputs: { bytes: Buffer; slow?: boolean }[]): Promise<RequestVerdict[]> {
    // Host is not required here: that is node's server policy (requireHostHeader), not llhttp's framing.
    const server = http.createServer({ requireHostHeader: false });
    let seen: {
        requests: (SeenRequest & { parts: Buffer[]; req: http.IncomingMessage })[];
        end: RequestVerdict["end"];
    };
    server.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
        const r = { ...pickNode(req), body: "", complete: false, parts: [] as Buffer[], req };
        seen.requests.push(r);
        req.on("data", (d: Buffer) => r.parts.push(d));
        req.on("error", () => undefined);
        req.on("end", () => res.end());
    });
    server.on("connect", (req: http.IncomingMessage, socket: net.Socket) => {
        seen.requests.push({ ...pickNode(req), body: "", complete: true, parts: [], req });
        seen.end = "tunnel";
        socket.destroy();
    });
    // A refusal: the socket stays a moment so that body bytes node read before it still reach `data`.
    server.on("clientError", (_err: Error, socket: net.Socket) => {
        seen.end = "refused";
        setTimeout(() => socket.destroy(), 20);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as net.AddressInfo).port;
    const out: RequestVerdict[] = [];
    try {
        for (const input of inputs) {
            seen = { requests: [], end: "clean" };
            const closed = new Promise<void>((r) => server.once("connection", (s: net.Socket) => s.once("close", r)));
            const client = net.connect(port, "127.0.0.1");
            client.on("error", () => undefined).resume();
            await new Promise<void>((r) => client.once("connect", r));
            await send(client, input.bytes, input.slow === true);
            await closed;
            await new Promise((r) => setTimeout(r, 5));
            const requests = seen.requests.map(({ parts, req, ...r }) => ({
                ...r,
                body: text(parts),
                complete: r.complete || req.complete,
            }));
            const end = requests.some((r) => !r.complete) ? "refused" : seen.end;
            out.push({ requests, end });
        }
    } finally {
        server.close();
    }
    return out;
}

function pickNode(req: http.IncomingMessage) {
    return { method: req.method!, target: req.url!, version: req.httpVersion, headers: req.rawHeaders };
}

/** node:http's client verdicts: a raw server answers each request with the input's bytes, then closes. */
export async function nodeResponseVerdicts(inputs: { bytes: Buffer; method: string }[]): Promise<ResponseVerdict[]> {
    let answer: Buffer = Buffer.alloc(0);
    const server = net.createServer((s) => {
        let got = "";
        s.on("error", () => undefined);
        s.on("data", (d) => {
            got += d.toString("latin1");
            if (got.includes("\r\n\r\n")) void send(s, answer, false);
        });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as net.AddressInfo).port;
    const out: ResponseVerdict[] = [];
    try {
        for (const input of inputs) {
            answer = input.bytes;
            out.push(await nodeResponse(port, input.method));
        }
    } finally {
        server.close();
    }
    return out;
}

async function nodeResponse(port: number, method: string): Promise<ResponseVerdict> {
    const v: ResponseVerdict = { interim: [], body: "", outcome: "refused" };
    const parts: Buffer[] = [];
    let res: http.IncomingMessage | undefined;
    let before = false;
    let after = false;
    const req = http.request({ host: "127.0.0.1", port, method, path: "/", agent: false });
    req.on("information", (i) => v.interim.push(i.statusCode));
    req.on("response", (r: http.IncomingMessage) => {
        res = r;
        Object.assign(v, { status: r.statusCode, headers: r.rawHeaders });
        r.on("data", (d: Buffer) => parts.push(d));
        r.on("error", () => undefined);
    });
    // An error once the answer was read whole is about the bytes behind it: the answer stands.
    req.on("error", () => void (res?.complete ? (after = true) : (before = true)));
    const closed = new Promise<void>((r) => req.once("close", r));
    req.end();
    await closed;
    // The answer's last `data` events may still be queued behind the close.
    await new Promise((r) => setTimeout(r, 10));
    v.body = text(parts);
    if (res?.complete && !before) v.outcome = after ? "extra" : "complete";
    return v;
}
