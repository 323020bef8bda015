/**
 * Graceful stop: while the running engine operation finishes, the listener stays open and every
 * request except /healthz and /metrics is answered 503 not_ready with Retry-After (and the connection
 * closed after it); once the operation is done the listener closes. The operation is a real scale-up;
 * the drain is additionally held open by the test so the window lasts as long as the checks need.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { rawHttp } from "../helpers/net";
import { EMPTY_LOCAL_POOL, startTestService, TestService, TOKENS } from "../helpers/service";
import { teardown } from "../helpers/harness";

let svc: TestService;
const cleanup = teardown();
before(async () => {
    svc = await startTestService(EMPTY_LOCAL_POOL, { converge: false });
    cleanup.own(svc);
});

const get = (route: string, token?: string) =>
    `GET ${route} HTTP/1.1\r\nHost: x\r\n${token ? `Authorization: Bearer ${token}\r\n` : ""}\r\n`;
const post = (route: string, body: string, token: string, chunked = false) =>
    chunked
        ? `POST ${route} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`
        : `POST ${route} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

test(
    "while the running operation drains, requests get 503 not_ready; afterwards the listener is closed",
    { timeout: 180_000 },
    async () => {
        const port = svc.port;
        const scale = await svc.call("PUT", "/v1/pools/web/replicas", { token: TOKENS.scale, body: { replicas: 1 } });
        assert.equal(scale.status, 202);
        const opId = scale.body.operation.id;
        // An idle keep-alive connection opened before the stop must also get the answer (and then be closed).
        const early = net.connect({ host: "127.0.0.1", port });
        await new Promise((r) => early.once("connect", r));

        let release!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        const drain = svc.scaler.drain.bind(svc.scaler);
        let drained = false;
        svc.scaler.drain = async () => {
            await drain();
            drained = true;
            await gate;
        };
        const runningAtStop = svc.scaler.busy();
        let stopped = false;
        const stopping = svc.stop().then(() => (stopped = true));
        try {
            const refused = [
                ["lease (fast path)", post("/v1/leases", "{}", TOKENS.lease)],
                ["lease (chunked, Express)", post("/v1/leases", "{}", TOKENS.lease, true)],
                ["release", post("/v1/leases/abc/release", '{"outcome":"ok"}', TOKENS.lease)],
                [
                    "scale",
                    `PUT /v1/pools/web/replicas HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKENS.scale}\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{"replicas":2}`,
                ],
                ["pools", get("/v1/pools", TOKENS.discover)],
                ["operation", get(`/v1/operations/${opId}`, TOKENS.scale)],
                ["echo", get("/v1/echo")],
                ["readyz", get("/readyz")],
                ["no token", get("/v1/proxies")],
                ["unknown route", get("/nope")],
            ] as const;
            for (const [name, request] of refused) {
                const r = await rawHttp(port, request);
                assert.equal(r.status, 503, `${name}: ${r.body}`);
                assert.equal(r.headers["retry-after"], "5", name);
                assert.equal(r.headers["content-type"], "application/json; charset=utf-8", name);
                assert.equal(JSON.parse(r.body).error.code, "not_ready", name);
                assert.match(JSON.parse(r.body).error.message, /shutting down/, name);
                assert.ok(r.closedByServer, `${name}: the server closes the connection after answering`);
            }
            for (const route of ["/healthz", "/metrics"])
                assert.equal((await rawHttp(port, get(route))).status, 200, `${route} stays answered`);

            let earlyData = "";
            early.setEncoding("utf8");
            early.on("data", (c) => (earlyData += c));
            const earlyEnd = new Promise((r) => early.once("end", r));
            early.write(get("/v1/pools", TOKENS.discover));
            await earlyEnd;
            assert.match(earlyData, /^HTTP\/1\.1 503 /, "a keep-alive connection from before the stop gets 503 too");
            assert.equal(stopped, false, "still stopping while the drain is held");
        } finally {
            release();
            await stopping;
        }
        assert.ok(drained);
        await assert.rejects(rawHttp(port, get("/healthz")), /ECONNREFUSED/, "after the drain the listener is closed");

        // The operation in flight when the stop began finished; it was not cut short.
        const journal = JSON.parse(fs.readFileSync(path.join(svc.runDir, "operations-svc.json"), "utf8"));
        const op = journal.find((o: any) => o.id === opId);
        assert.equal(op.status, "succeeded", JSON.stringify(op));
        assert.ok(runningAtStop, "the scale-up was running (or queued) when the stop began");
        // The refusals are deliberate answers: no error line for them, no stack.
        const errors = svc.logs.map((l) => JSON.parse(l)).filter((l) => l.level >= 50);
        assert.deepEqual(errors, []);
        assert.ok(svc.logs.some((l) => l.includes("stopping: answering 503 not_ready")));
    },
);
