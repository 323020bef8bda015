/**
 * The operation event stream, read with a raw node:http client against a real service: an `id:` on
 * every event, `: ping` heartbeats while the operation runs (interval shortened to 200 ms here; 15 s by
 * default), and `Last-Event-ID` resume both mid-operation and after it settled.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import { settled, settledConverge, startTestService, TestService, TOKENS } from "../helpers/service";

let svc: TestService;
before(async () => {
    svc = await startTestService(
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [{ name: "web", provider: "local", replicas: 1, maxReplicas: 4 }],
        },
        { sseHeartbeatMs: 200 },
    );
    await settledConverge(svc);
});
after(async () => {
    await svc?.close();
});

interface Sse {
    type: string;
    id: number;
    data: any;
}

/**
 * Reads the stream of `opId` from the raw bytes. `stopAfter`: hang up after that many events (a client
 * that loses its connection). Resolves with the events, the raw text and how many `: ping` comments came.
 */
function read(
    opId: string,
    opts: { lastEventId?: string; stopAfter?: number } = {},
): Promise<{ events: Sse[]; raw: string; pings: number; status: number }> {
    return new Promise((resolve, reject) => {
        const headers: Record<string, string> = {
            authorization: `Bearer ${TOKENS.scale}`,
            accept: "text/event-stream",
        };
        if (opts.lastEventId !== undefined) headers["last-event-id"] = opts.lastEventId;
        const url = new URL(svc.url);
        const req = http.request(
            { host: "127.0.0.1", port: url.port, path: `/v1/operations/${opId}/events`, headers },
            (res) => {
                let raw = "";
                const events: Sse[] = [];
                let pings = 0;
                let buf = "";
                const done = () => resolve({ events, raw, pings, status: res.statusCode ?? 0 });
                res.setEncoding("utf8");
                res.on("data", (chunk: string) => {
                    raw += chunk;
                    buf += chunk;
                    for (let i = buf.indexOf("\n\n"); i >= 0; i = buf.indexOf("\n\n")) {
                        const block = buf.slice(0, i);
                        buf = buf.slice(i + 2);
                        if (block === ": ping") {
                            pings++;
                            continue;
                        }
                        const field = (n: string) => new RegExp(`^${n}: (.*)$`, "m").exec(block)?.[1];
                        assert.match(field("id") ?? "", /^\d+$/, `an id on every event: ${block.slice(0, 200)}`);
                        events.push({
                            type: field("event")!,
                            id: Number(field("id")),
                            data: JSON.parse(field("data")!),
                        });
                        if (opts.stopAfter !== undefined && events.length >= opts.stopAfter) {
                            req.destroy();
                            return done();
                        }
                    }
                });
                res.on("end", done);
            },
        );
        req.on("error", reject);
        req.end();
    });
}

test(
    "ids on every event, heartbeats while running, resume with Last-Event-ID mid-operation and after",
    { timeout: 120_000 },
    async () => {
        const op = (await svc.call("PUT", "/v1/pools/web/replicas", { token: TOKENS.scale, body: { replicas: 3 } }))
            .body.operation;
        const first = await read(op.id, { stopAfter: 2 }); // the connection drops early
        assert.equal(first.events.length, 2);
        const rest = await read(op.id, { lastEventId: String(first.events.at(-1)!.id) });
        await settled(svc, op.id);
        const full = await read(op.id); // after the fact: the whole buffered stream

        assert.equal(rest.status, 200);
        assert.deepEqual(
            full.events.map((e) => e.id),
            full.events.map((_, i) => i + 1),
            "ids count up from 1 without gaps",
        );
        assert.deepEqual([...first.events, ...rest.events], full.events, "resuming loses and repeats nothing");
        assert.ok(
            full.events.some((e) => e.type === "progress" && e.data.kind === "resource-start"),
            full.raw.slice(0, 400),
        );
        assert.equal(full.events.at(-1)!.type, "status");
        assert.equal(full.events.at(-1)!.data.status, "succeeded");
        assert.ok(
            rest.pings >= 1,
            `a heartbeat while the operation ran (${rest.pings} pings over ${rest.events.length} events)`,
        );
        assert.equal(full.pings, 0, "a settled operation's replay ends at once");

        const tail = await read(op.id, { lastEventId: String(full.events.length - 1) });
        assert.deepEqual(tail.events, [full.events.at(-1)], "after the last-but-one id: only the last event");
        assert.deepEqual(
            (await read(op.id, { lastEventId: String(full.events.length) })).events,
            [],
            "nothing after the last id",
        );
        const bad = await read(op.id, { lastEventId: "banana" });
        assert.equal(bad.status, 400);
        assert.match(bad.raw, /"code":"invalid_request".*Last-Event-ID/);
    },
);
