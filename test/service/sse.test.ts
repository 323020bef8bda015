/**
 * The operation event stream, read with a raw node:http client against a real service: an `id:` on
 * every event, `: ping` heartbeats while the operation runs (interval shortened to 200 ms here; 15 s by
 * default), and `Last-Event-ID` resume both mid-operation and after it settled.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { settledConverge, startTestService, TestService, TOKENS } from "../helpers/service";
import { readSse, type SseOptions } from "../helpers/sse";
import { settled, teardown } from "../helpers/harness";

let svc: TestService;
const cleanup = teardown();
before(async () => {
    svc = await startTestService(
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [{ name: "web", provider: "local", replicas: 1, maxReplicas: 4 }],
        },
        { sseHeartbeatMs: 200 },
    );
    cleanup.own(svc);
    await settledConverge(svc);
});

/** The stream of `opId`, every event with its `id:` (this route always sends one). */
async function read(opId: string, opts: Omit<SseOptions, "token"> = {}) {
    const r = await readSse(svc.url, opId, { ...opts, token: TOKENS.scale });
    for (const e of r.events) assert.equal(typeof e.id, "number", `an id on every event: ${JSON.stringify(e)}`);
    return r;
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
