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
import { waitFor } from "../helpers/harness";

const TOKEN = "tok-hostile-0123456789abcdef";
/** A member that answers nothing and keeps every byte it got; how many of its connections are open. */
let recorder: net.Server;
const got: Buffer[] = [];
let recorderOpen = 0;
let silentReleases: { proxy: string; outcome: string }[] = [];
let silent: Gateway;
let silentPort = 0;
let origin: Awaited<ReturnType<typeof listenLoopback>>;
let member: ProxyChainServer;
let working: Gateway;
let workingPort = 0;

before(async () => {
    recorder = net.createServer((s) => {
        recorderOpen++;
        s.on("data", (c: Buffer) => got.push(c)).on("error", () => undefined);
        s.once("close", () => recorderOpen--);
    });
    await new Promise<void>((r) => recorder.listen(0, "127.0.0.1", r));
    const a = await startGatewayFleet({
        token: TOKEN,
        members: [{ id: "rec-0", pool: "p", url: `http://127.0.0.1:${(recorder.address() as net.AddressInfo).port}` }],
        pools: [{ name: "p" }],
        gateway: { memberAnswerMs: 1000 },
    });
    silent = a.gateway;
    silentPort = a.port;
    silentReleases = a.released;
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
    // The client's fault: the member's connection is closed at once, and its lease goes back as `ok`.
    await waitFor("the member's connection closed", () => recorderOpen === 0, 3000, 20);
    assert.deepEqual(silentReleases.at(-1), { proxy: "rec-0", outcome: "ok" });
});

/** A gateway over one raw member whose connections run `serve`; its open and total connections counted. */
async function overRawMember(serve: (s: net.Socket, n: number) => void) {
    const conns = { open: 0, total: 0 };
    const sockets = new Set<net.Socket>();
    const server = net.createServer((s) => {
        conns.open++;
        sockets.add(s);
        s.on("error", () => undefined).once("close", () => conns.open--);
        serve(s, ++conns.total);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const g = await startGatewayFleet({
        token: TOKEN,
        members: [{ id: "raw-0", pool: "p", url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}` }],
        pools: [{ name: "p" }],
    });
    const get = (p: string) =>
        rawHttp(
            g.port,
            `GET http://127.0.0.1:9${p} HTTP/1.1\r\nHost: a\r\nProxy-Authorization: ${gatewayClient(g.port, TOKEN).auth("p")}\r\nConnection: close\r\n\r\n`,
            3000,
        );
    const close = async () => {
        await g.gateway.close(50);
        for (const s of sockets) s.destroy(); // a member that stopped reading never sees the gateway's end
        await new Promise((r) => server.close(r));
    };
    return { conns, get, close, port: g.port, auth: gatewayClient(g.port, TOKEN).auth("p") };
}

test("bytes after a member's answer: that connection is never reused, so they never become the next request's answer", async () => {
    const m = await overRawMember((s, n) =>
        s.on("data", () => {
            if (n > 1) return void s.write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh");
            // The answer, then bytes after its end in the same write, then a stray answer nobody asked for.
            s.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok\r\n");
            setTimeout(() => s.write("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nFOR-A!!!!"), 150);
        }),
    );
    try {
        const a = await m.get("/a");
        assert.equal(a.status, 200);
        assert.equal(a.body, "ok");
        const b = await m.get("/b");
        assert.equal(b.body, "fresh", "the next request went over a new member connection");
        assert.equal(m.conns.total, 2);
    } finally {
        await m.close();
    }
});

test("a member saying Keep-Alive: timeout=1: its idle connection is closed, not pooled", async () => {
    const m = await overRawMember((s) =>
        s.on("data", () => s.write("HTTP/1.1 200 OK\r\nKeep-Alive: timeout=1\r\nContent-Length: 2\r\n\r\nok")),
    );
    try {
        assert.equal((await m.get("/1")).body, "ok");
        await waitFor("the member connection closed by the gateway", () => m.conns.open === 0, 3000, 20);
        assert.equal((await m.get("/2")).body, "ok");
        assert.equal(m.conns.total, 2);
    } finally {
        await m.close();
    }
});

test("a client whose upload is paused when the answer comes: its connection is closed once it closes its side", async () => {
    const m = await overRawMember((s) =>
        s.once("data", () => {
            s.pause(); // reads the head, then nothing: the upload backs up
            setTimeout(() => s.write("HTTP/1.1 413 Too Large\r\nContent-Length: 0\r\n\r\n"), 300);
        }),
    );
    try {
        const c = net.connect({ port: m.port, host: "127.0.0.1", allowHalfOpen: true });
        const seen = { text: "", ended: false, closed: false };
        c.setEncoding("latin1")
            .on("data", (t: string) => (seen.text += t))
            .on("end", () => (seen.ended = true))
            .on("close", () => (seen.closed = true))
            .on("error", () => undefined);
        c.write(
            `POST http://127.0.0.1:9/up HTTP/1.1\r\nHost: a\r\nProxy-Authorization: ${m.auth}\r\nContent-Length: 100000000\r\n\r\n`,
        );
        const chunk = Buffer.alloc(64 * 1024, 97);
        const pump = () => {
            while (!seen.ended && !c.destroyed && c.write(chunk));
        };
        c.on("drain", pump);
        pump();
        await waitFor("the gateway's answer and its end", () => seen.ended, 3000, 20);
        assert.match(seen.text, /^HTTP\/1\.1 413 /);
        c.end(); // the client closes its side, as any client does after the end
        await waitFor("the connection closed on the gateway's side too", () => seen.closed, 5000, 20);
    } finally {
        await m.close();
    }
});

test("pipelined requests: answered in order on one connection, each through its own lease", async () => {
    const a = gatewayClient(workingPort, TOKEN).auth("p");
    const req = (p: string) => `GET ${origin.url}${p} HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Authorization: ${a}\r\n\r\n`;
    const s = net.connect(workingPort, "127.0.0.1");
    let text = "";
    s.setEncoding("latin1").on("data", (c: string) => (text += c));
    s.write(req("/1") + req("/2") + req("/3"));
    await waitFor("three answers", () => (text.match(/page \/\d/g) ?? []).length >= 3, 3000, 20);
    s.destroy();
    assert.deepEqual(text.match(/page \/\d/g), ["page /1", "page /2", "page /3"]);
    assert.equal((text.match(/X-Egress-Attempts: 1\r\n/g) ?? []).length, 3);
});

test("one keep-alive connection: credentials checked once are checked again when they change, and the pool each time", async () => {
    const b = await startGatewayFleet({
        token: TOKEN,
        members: [{ id: "once-0", pool: "q", url: `http://127.0.0.1:${member.port}` }],
        pools: [{ name: "q" }],
    });
    try {
        const good = gatewayClient(b.port, TOKEN).auth("q");
        const wrong = gatewayClient(b.port, "tok-not-a-token-0123456789").auth("q");
        const req = (p: string, a: string) =>
            `GET ${origin.url}${p} HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Authorization: ${a}\r\n\r\n`;
        const open = () => {
            const s = net.connect(b.port, "127.0.0.1");
            const got = { text: "" };
            s.setEncoding("latin1").on("data", (c: string) => (got.text += c));
            return { s, got };
        };
        // Good twice (the second from what the first passed), then a wrong token on the same connection: 407.
        const one = open();
        one.s.write(req("/1", good) + req("/2", good) + req("/3", wrong));
        await waitFor("the wrong token's 407", () => / 407 /.test(one.got.text), 3000, 20);
        one.s.destroy();
        assert.deepEqual(one.got.text.match(/page \/\d/g), ["page /1", "page /2"]);
        // The pool leaves while a connection that passed for it stays open: its next request is refused.
        const two = open();
        two.s.write(req("/4", good));
        await waitFor("the first answer", () => /page \/4/.test(two.got.text), 3000, 20);
        b.fleet.sync([], [{ name: "other", cooldownSeconds: 0 } as never]);
        two.s.write(req("/5", good));
        await waitFor("the gone pool's refusal", () => /unknown_pool/.test(two.got.text), 3000, 20);
        two.s.destroy();
        assert.deepEqual(two.got.text.match(/page \/\d/g), ["page /4"]);
    } finally {
        await b.gateway.close(100);
    }
});
