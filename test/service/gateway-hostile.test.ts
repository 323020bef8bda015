/**
 * Hostile framing through the gateway's byte-level door (issue 34): every request two parsers could
 * read two ways is refused 400 with `Proxy-Status` and never relayed (the member, a raw TCP server
 * here, records every byte it gets and sees none of them). A body that breaks its chunked framing after
 * its head went out is cut on both sides: the member never gets the bytes after the break, so nothing
 * there can become a second request. Pipelined requests are answered in order, each its own lease.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import * as net from "node:net";
import { Server as ProxyChainServer } from "proxy-chain";
import { listenLoopback, rawHttp } from "../helpers/net";
import { gatewayClient, startGatewayFleet } from "../helpers/gateway-fleet";
import type { Gateway } from "../../src/service/gateway";

const TOKEN = "tok-hostile-0123456789abcdef";
/** A member that answers nothing and keeps every byte it got, per connection. */
let recorder: net.Server;
const got: Buffer[] = [];
let silent: Gateway;
let silentPort = 0;
let origin: Awaited<ReturnType<typeof listenLoopback>>;
let member: ProxyChainServer;
let working: Gateway;
let workingPort = 0;

before(async () => {
    recorder = net.createServer((s) => s.on("data", (c: Buffer) => got.push(c)));
    await new Promise<void>((r) => recorder.listen(0, "127.0.0.1", r));
    const a = await startGatewayFleet({
        token: TOKEN,
        members: [{ id: "rec-0", pool: "p", url: `http://127.0.0.1:${(recorder.address() as net.AddressInfo).port}` }],
        pools: [{ name: "p" }],
        gateway: { memberAnswerMs: 1000 },
    });
    silent = a.gateway;
    silentPort = a.port;
    origin = await listenLoopback(http.createServer((req, res) => res.end(`page ${req.url}`)));
    member = new ProxyChainServer({ port: 0, host: "127.0.0.1", verbose: false });
    await member.listen();
    const b = await startGatewayFleet({
        token: TOKEN,
        members: [{ id: "ok-0", pool: "p", url: `http://127.0.0.1:${member.port}` }],
        pools: [{ name: "p" }],
    });
    working = b.gateway;
    workingPort = b.port;
});
after(async () => {
    await silent?.close(100);
    await working?.close(100);
    await member?.close(true);
    await origin?.close();
    await new Promise((r) => recorder?.close(r));
});

const auth = () => gatewayClient(silentPort, TOKEN).auth("p");
const line = (target = "http://127.0.0.1:9/x") => `GET ${target} HTTP/1.1\r\n`;

/** Each request a smuggler would send, with the strictness table's reason the gateway names. */
const HOSTILE: [string, () => string, string][] = [
    [
        "Content-Length with Transfer-Encoding",
        () =>
            `POST http://127.0.0.1:9/x HTTP/1.1\r\nHost: a\r\nProxy-Authorization: ${auth()}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
        "content_length_with_transfer_encoding",
    ],
    [
        "two Content-Lengths",
        () =>
            `POST http://127.0.0.1:9/x HTTP/1.1\r\nHost: a\r\nProxy-Authorization: ${auth()}\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx`,
        "duplicate_content_length",
    ],
    ["obs-fold", () => `${line()}Host: a\r\nProxy-Authorization: ${auth()}\r\nX-A: 1\r\n  2\r\n\r\n`, "obs_fold"],
    ["bare LF", () => `${line()}Host: a\nProxy-Authorization: ${auth()}\r\n\r\n`, "bare_lf"],
    [
        "Transfer-Encoding other than chunked",
        () =>
            `POST http://127.0.0.1:9/x HTTP/1.1\r\nHost: a\r\nProxy-Authorization: ${auth()}\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n`,
        "invalid_transfer_encoding",
    ],
    ["two Host lines", () => `${line()}Host: a\r\nHost: b\r\nProxy-Authorization: ${auth()}\r\n\r\n`, "duplicate_host"],
    [
        "a space before the colon",
        () => `${line()}Host: a\r\nProxy-Authorization : ${auth()}\r\n\r\n`,
        "invalid_field_name",
    ],
];

for (const [name, request, reason] of HOSTILE)
    test(`${name}: 400 with Proxy-Status, nothing relayed`, async () => {
        const before = got.length;
        const r = await rawHttp(silentPort, request(), 3000);
        assert.equal(r.status, 400, JSON.stringify(r));
        assert.equal(r.headers["x-egress-error"], "bad_request");
        assert.match(r.headers["proxy-status"], /^egress; error=http_request_error/);
        assert.match(JSON.parse(r.body).error.message, new RegExp(`\\(${reason}: `));
        assert.ok(r.closedByServer, "the connection is closed");
        await new Promise((res) => setTimeout(res, 100));
        assert.equal(got.length, before, "the member got no byte of it");
    });

test("a chunked body that breaks its framing after the head went out: cut on both sides, nothing after the break relayed", async () => {
    const before = got.length;
    const smuggled = `GET http://127.0.0.1:9/second HTTP/1.1\r\nHost: a\r\n\r\n`;
    const r = await rawHttp(
        silentPort,
        `POST http://127.0.0.1:9/x HTTP/1.1\r\nHost: a\r\nProxy-Authorization: ${auth()}\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n${smuggled}`,
        3000,
    ).catch(() => ({ status: 0, closedByServer: true }));
    assert.ok(!(r.status > 0), `no answer: the request was already on its way, it is cut (got ${r.status})`);
    assert.ok(r.closedByServer);
    await new Promise((res) => setTimeout(res, 200));
    const seen = Buffer.concat(got.slice(before)).toString("latin1");
    assert.ok(!seen.includes("/second"), `the member never saw the bytes after the break: ${JSON.stringify(seen)}`);
    assert.ok(!seen.includes("zz"), "nor the broken chunk line");
});

test("pipelined requests: answered in order on one connection, each through its own lease", async () => {
    const a = gatewayClient(workingPort, TOKEN).auth("p");
    const req = (p: string) => `GET ${origin.url}${p} HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Authorization: ${a}\r\n\r\n`;
    const s = net.connect(workingPort, "127.0.0.1");
    let text = "";
    s.setEncoding("latin1").on("data", (c: string) => (text += c));
    s.write(req("/1") + req("/2") + req("/3"));
    for (let t = 0; t < 100 && (text.match(/page \/\d/g) ?? []).length < 3; t++)
        await new Promise((r) => setTimeout(r, 50));
    s.destroy();
    assert.deepEqual(text.match(/page \/\d/g), ["page /1", "page /2", "page /3"]);
    assert.equal((text.match(/X-Egress-Attempts: 1\r\n/g) ?? []).length, 3);
});
