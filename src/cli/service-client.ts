import * as http from "node:http";
import type { ProgressEvent } from "../engine";
import type { Operation } from "../state/operations/operation";

/** The service's HTTP API over its unix socket (src/state/cluster/announce.ts): no token, the file mode is the gate. */
export class ServiceClient {
    constructor(readonly socket: string) {}

    /** One JSON request; the body of any answer is parsed (errors are `{error: {code, message, details}}`). */
    request(method: string, route: string, body?: unknown): Promise<{ status: number; body: any }> {
        return new Promise((resolve, reject) => {
            const text = body === undefined ? undefined : JSON.stringify(body);
            const req = http.request(
                {
                    socketPath: this.socket,
                    method,
                    path: route,
                    headers: text
                        ? { "content-type": "application/json", "content-length": Buffer.byteLength(text) }
                        : {},
                },
                (res) => {
                    let data = "";
                    res.setEncoding("utf8");
                    res.on("data", (c) => (data += c));
                    res.on("end", () => {
                        try {
                            resolve({ status: res.statusCode ?? 0, body: data ? JSON.parse(data) : undefined });
                        } catch {
                            reject(
                                new Error(
                                    `the service answered ${method} ${route} with ${res.statusCode} and a body that is not JSON`,
                                ),
                            );
                        }
                    });
                    res.on("error", reject);
                },
            );
            req.on("error", reject);
            req.end(text);
        });
    }

    /**
     * Follows an operation's Server-Sent Events until the stream ends; returns the last status seen (the
     * settled operation, unless the service went away first).
     */
    follow(opId: string, onProgress?: (e: ProgressEvent) => void): Promise<Operation | undefined> {
        return new Promise((resolve, reject) => {
            let last: Operation | undefined;
            const req = http.request(
                { socketPath: this.socket, method: "GET", path: `/v1/operations/${encodeURIComponent(opId)}/events` },
                (res) => {
                    if (res.statusCode !== 200) {
                        res.resume();
                        return reject(
                            new Error(`the service answered ${res.statusCode} for the events of operation ${opId}`),
                        );
                    }
                    let buf = "";
                    res.setEncoding("utf8");
                    res.on("data", (chunk: string) => {
                        buf += chunk;
                        for (let i = buf.indexOf("\n\n"); i >= 0; i = buf.indexOf("\n\n")) {
                            const block = buf.slice(0, i);
                            buf = buf.slice(i + 2);
                            const type = /^event: (.*)$/m.exec(block)?.[1];
                            const data = /^data: (.*)$/m.exec(block)?.[1];
                            if (!type || data === undefined) continue;
                            if (type === "progress") onProgress?.(JSON.parse(data));
                            else if (type === "status") last = JSON.parse(data);
                        }
                    });
                    res.on("end", () => resolve(last));
                    res.on("error", () => resolve(last)); // the service died mid-stream: the caller says so
                },
            );
            req.on("error", reject);
            req.end();
        });
    }
}
