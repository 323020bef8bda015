/**
 * The gateway's own forwarder (issue 21, src/service/gateway/forward-*.ts), in process over members the
 * test controls, one pool each: `good` is a real forward proxy (proxy-chain, as the local kind runs)
 * that insists on its member credentials, `refuse` a port nothing listens on, `reset` a member that
 * starts an answer and resets the connection. Everything on loopback.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as crypto from "node:crypto";
import * as http from "node:http";
import * as net from "node:net";
import { Server as ProxyChainServer } from "proxy-chain";
import { freeLoopbackPort, listenLoopback } from "../helpers/net";
import {
    assertProxyStatus,
    fakeMember,
    gatewayClient,
    type RecordedRelease,
    startGatewayFleet,
    waitReleased as waitReleasedOf,
} from "../helpers/gateway-fleet";
import type { Gateway } from "../../src/service/gateway";

const TOKEN = "tok-forwarder-0123456789abcdef";
const BIG = 50 * 1024 * 1024;
let gateway: Gateway;
let gatewayPort = 0;
let origin: Awaited<ReturnType<typeof listenLoopback>>;
let good: ProxyChainServer;
let reset: Awaited<ReturnType<typeof fakeMember>>;
let eager: net.Server;
/** What the `eager` member received after the CONNECT head. */
let eagerGot = "";
let released: RecordedRelease[] = [];
/** The origin's /big download: bytes handed to its socket so far, and whether all were. */
const big = { written: 0, finished: false };
let client: ReturnType<typeof gatewayClient>;

before(async () => {
    origin = await listenLoopback(
        http.createServer((req, res) => {
            if (req.url!.endsWith("/hash")) {
                const h = crypto.createHash("sha256");
                req.on("data", (c) => h.update(c)).on("end", () => res.end(h.digest("hex")));
                return;
            }
            // 50 MB in 64 KiB chunks, each written only when the socket takes more (write's backpressure).
            res.writeHead(200, { "content-type": "application/octet-stream", "content-length": BIG });
            const chunk = Buffer.alloc(64 * 1024, 7);
            const more = () => {
                while (big.written < BIG) {
                    big.written += chunk.length;
                    if (!res.write(chunk)) return void res.once("drain", more);
                }
                big.finished = true;
                res.end();
            };
            more();
        }),
    );
    good = new ProxyChainServer({
        port: 0,
        host: "127.0.0.1",
        verbose: false,
        prepareRequestFunction: ({ username, password }) => ({
            requestAuthentication: username !== "member" || password !== "member-secret",
        }),
    });
    await good.listen();
    // A member that answers the head and a little of a body, then resets the connection.
    reset = await fakeMember("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\npartial", 50);
    // A member that sends tunnel bytes in the same packet as its 200, then echoes what comes after the head.
    eager = net.createServer((s) => {
        let head = "";
        const onData = (c: Buffer) => {
            head += c.toString("latin1");
            const end = head.indexOf("\r\n\r\n");
            if (end < 0) return;
            s.off("data", onData);
            s.write("HTTP/1.1 200 OK\r\n\r\nhello from the member|");
            eagerGot = head.slice(end + 4);
            s.on("data", (d: Buffer) => (eagerGot += d.toString("latin1")));
        };
        s.on("data", onData).on("error", () => undefined);
    });
    await new Promise<void>((r) => eager.listen(0, "127.0.0.1", r));
    const urls: Record<string, string> = {
        good: `http://member:member-secret@127.0.0.1:${good.port}`,
        refuse: `http://127.0.0.1:${await freeLoopbackPort()}`,
        reset: reset.url,
        eager: `http://127.0.0.1:${(eager.address() as net.AddressInfo).port}`,
    };
    const g = await startGatewayFleet({
        token: TOKEN,
        members: Object.entries(urls).map(([pool, url]) => ({ id: `${pool}-0`, pool, url })),
        pools: Object.keys(urls).map((name) => ({ name })),
    });
    ({ gateway, released, port: gatewayPort } = g);
    client = gatewayClient(gatewayPort, TOKEN);
});

after(async () => {
    await gateway?.close(100);
    await origin?.close();
    await good?.close(true);
    await reset?.close();
    await new Promise((r) => eager?.close(r));
});

const auth = (pool: string) => client.auth(pool);
const target = (p: string) => `http://127.0.0.1:${origin.port}${p}`;
const waitReleased = (n: number) => waitReleasedOf(released, n);

/** A CONNECT through the gateway: the status line and headers of its answer (the tunnel is never used). */
const connect = (pool: string) => client.connect(pool, `127.0.0.1:${origin.port}`);

test("CONNECT through a member that refuses connections: 502 with Proxy-Status connection_refused, no 59x", async () => {
    const before = released.length;
    const a = await connect("refuse");
    assert.equal(a.status, 502);
    assertProxyStatus(a.headers["proxy-status"], "connection_refused", "refuse-0");
    assert.equal(a.headers["x-egress-error"], "member_unreachable");
    assert.equal(JSON.parse(a.body).error.code, "member_unreachable");
    await waitReleased(before + 1);
    assert.deepEqual(released.at(-1), { proxy: "refuse-0", outcome: "error" });
    // The same member for plain HTTP: the same answer, before any byte from it.
    const h = await fetchVia("refuse", target("/x"));
    assert.equal(h.status, 502);
    assertProxyStatus(h.headers["proxy-status"], "connection_refused", "refuse-0");
    await waitReleased(before + 2);
    assert.equal(released.at(-1)!.outcome, "error");
});

test("CONNECT through a working member opens the tunnel (member credentials sent); a member resetting mid-answer cuts the client's answer, outcome error", async () => {
    const tunnelled = await connect("good");
    assert.equal(tunnelled.status, 200);
    const before = released.length;
    const cutOff = await new Promise<{ status: number; ended: string }>((resolve) => {
        const req = http.request(
            {
                host: "127.0.0.1",
                port: gatewayPort,
                path: target("/x"),
                headers: { "proxy-authorization": auth("reset") },
            },
            (res) => {
                res.on("data", () => undefined);
                res.on("end", () => resolve({ status: res.statusCode!, ended: "end" }));
                res.on("error", (e) => resolve({ status: res.statusCode!, ended: (e as NodeJS.ErrnoException).code! }));
            },
        );
        req.on("error", (e) => resolve({ status: 0, ended: (e as NodeJS.ErrnoException).code! }));
        req.end();
    });
    assert.equal(cutOff.status, 200, "the member's head was relayed");
    assert.notEqual(cutOff.ended, "end", "the client sees the answer break off, not a clean end");
    await waitReleased(before + 1);
    assert.deepEqual(released.at(-1), { proxy: "reset-0", outcome: "error" });
});

/** A request through the gateway with `body` streamed in chunks (no Content-Length: chunked). */
const fetchVia = (pool: string, url: string, body?: Buffer) => client.fetch(pool, url, body);

test("a 1 MB request body streams through the gateway and the member intact", async () => {
    const body = crypto.randomBytes(1024 * 1024);
    const a = await fetchVia("good", target("/hash"), body);
    assert.equal(a.status, 200);
    assert.equal(a.body, crypto.createHash("sha256").update(body).digest("hex"));
    assert.equal(a.headers["x-egress-proxy"], "good-0");
});

test("a client that stops reading holds the origin's 50 MB answer back (backpressure), then gets all of it", async () => {
    const socket = net.connect(gatewayPort, "127.0.0.1");
    socket.write(`GET ${target("/big")} HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${auth("good")}\r\n\r\n`);
    socket.pause(); // a reader that reads nothing for now
    await new Promise((r) => setTimeout(r, 1500));
    const held = big.written;
    assert.ok(!big.finished, "the origin could not write it all");
    assert.ok(held < BIG / 2, `the origin wrote ${held} bytes while nobody read: something buffered it`);
    let got = 0;
    await new Promise<void>((resolve, reject) => {
        socket.on("data", (c: Buffer) => {
            got += c.length;
            if (got > BIG) resolve(); // head and body
        });
        socket.on("error", reject);
        socket.resume();
    });
    socket.destroy();
    assert.ok(big.finished);
});

test("CONNECT: bytes the client sent with its CONNECT and bytes the member sent with its 200 both go through", async () => {
    const socket = net.connect(gatewayPort, "127.0.0.1");
    let got = "";
    socket.setEncoding("latin1").on("data", (c) => (got += c));
    // The CONNECT and the first tunnel bytes in one write: they reach the gateway as the head buffer.
    socket.write(
        `CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\nProxy-Authorization: ${auth("eager")}\r\n\r\nearly bytes|`,
    );
    for (let i = 0; i < 100 && !got.includes("member|"); i++) await new Promise((r) => setTimeout(r, 20));
    socket.write("later bytes");
    for (let i = 0; i < 100 && !eagerGot.endsWith("later bytes"); i++) await new Promise((r) => setTimeout(r, 20));
    socket.destroy();
    assert.equal(got, "HTTP/1.1 200 Connection Established\r\n\r\nhello from the member|");
    assert.equal(eagerGot, "early bytes|later bytes");
});
