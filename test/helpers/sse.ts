/**
 * Reads an operation's event stream (GET /v1/operations/:id/events) from the raw bytes with node:http,
 * as a crawler's client would: test/service/sse.test.ts (one process) and replica-events.test.ts
 * (replicas, the streams in the store).
 */
import * as http from "node:http";

export interface SseEvent {
    type: string;
    /** The `id:` line; undefined for an event sent without one. */
    id?: number;
    data: any;
}

export interface SseRead {
    events: SseEvent[];
    raw: string;
    /** How many `: ping` comments came. */
    pings: number;
    status: number;
}

export interface SseOptions {
    token: string;
    lastEventId?: string;
    /** Hang up after that many events (a client that loses its connection). */
    stopAfter?: number;
    /** Each event as it comes (a test that acts in the middle of a stream). */
    onEvent?: (e: SseEvent) => void;
}

/** Reads the stream of `opId` from the service at `baseUrl` until it ends (or `stopAfter`). */
export function readSse(baseUrl: string, opId: string, opts: SseOptions): Promise<SseRead> {
    return new Promise((resolve, reject) => {
        const headers: Record<string, string> = { authorization: `Bearer ${opts.token}`, accept: "text/event-stream" };
        if (opts.lastEventId !== undefined) headers["last-event-id"] = opts.lastEventId;
        const url = new URL(baseUrl);
        const req = http.request(
            { host: url.hostname, port: url.port, path: `/v1/operations/${opId}/events`, headers },
            (res) => {
                const out: SseRead = { events: [], raw: "", pings: 0, status: res.statusCode ?? 0 };
                let buf = "";
                res.setEncoding("utf8");
                res.on("data", (chunk: string) => {
                    out.raw += chunk;
                    buf += chunk;
                    for (let i = buf.indexOf("\n\n"); i >= 0; i = buf.indexOf("\n\n")) {
                        const block = buf.slice(0, i);
                        buf = buf.slice(i + 2);
                        if (block === ": ping") {
                            out.pings++;
                            continue;
                        }
                        const field = (n: string) => new RegExp(`^${n}: (.*)$`, "m").exec(block)?.[1];
                        const id = field("id");
                        const e: SseEvent = {
                            type: field("event")!,
                            id: id === undefined ? undefined : Number(id),
                            data: JSON.parse(field("data")!),
                        };
                        out.events.push(e);
                        opts.onEvent?.(e);
                        if (opts.stopAfter !== undefined && out.events.length >= opts.stopAfter) {
                            req.destroy();
                            return resolve(out);
                        }
                    }
                });
                res.on("end", () => resolve(out));
                res.on("error", () => resolve(out)); // the server went away mid-stream: what came so far
            },
        );
        req.on("error", reject);
        req.end();
    });
}
