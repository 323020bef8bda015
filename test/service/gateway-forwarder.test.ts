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
import pino from "pino";
import { Server as ProxyChainServer } from "proxy-chain";
import { freeLoopbackPort, listenLoopback } from "../helpers/net";
import { parseItem } from "../helpers/structured-field";
import { Fleet } from "../../src/service/fleet/fleet";
import { LeaseManager, type ReleaseOutcome } from "../../src/service/leases";
import { Gateway } from "../../src/service/gateway";
import { createMetrics } from "../../src/service/observe/metrics";
import { sha256 } from "../../src/service/http/auth";
import { immediate } from "../../src/service/store/types";

const TOKEN = "tok-forwarder-0123456789abcdef";
const BIG = 50 * 1024 * 1024;
let gateway: Gateway;
let gatewayPort = 0;
let origin: Awaited<ReturnType<typeof listenLoopback>>;
let good: ProxyChainServer;
let reset: net.Server;
let eager: net.Server;
/** What the `eager` member received after the CONNECT head. */
let eagerGot = "";
const released: { proxy: string; outcome: ReleaseOutcome }[] = [];
/** The origin's /big download: bytes handed to its socket so far, and whether all were. */
const big = { written: 0, finished: false };

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
    reset = net.createServer((s) => {
        s.once("data", () => {
            s.write("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\npartial");
            setTimeout(() => s.resetAndDestroy(), 50);
        });
        s.on("error", () => undefined);
    });
    await new Promise<void>((r) => reset.listen(0, "127.0.0.1", r));
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
        reset: `http://127.0.0.1:${(reset.address() as net.AddressInfo).port}`,
        eager: `http://127.0.0.1:${(eager.address() as net.AddressInfo).port}`,
    };
    const fleet = new Fleet(new LeaseManager({ targetCooldownSeconds: 0 }), {
        setMembers() {},
        get: () => ({ state: "healthy" }),
    });
    fleet.sync(
        Object.entries(urls).map(([pool, url], index) => ({
            id: `${pool}-0`,
            pool,
            provider: "local",
            kind: "local" as const,
            index,
            host: "127.0.0.1",
            port: Number(new URL(url).port),
            url,
            zone: "local",
        })),
        Object.keys(urls).map((name) => ({ name, cooldownSeconds: 0 }) as never),
    );
    // Which member each lease went to, and every release's outcome (the memory store answers at once).
    const members = new Map<string, string>();
    const acquire = fleet.acquire.bind(fleet);
    fleet.acquire = (...args) => {
        const got = immediate(acquire(...args));
        if (got.ok) members.set(got.lease.id, got.lease.proxy.id);
        return got;
    };
    const release = fleet.release.bind(fleet);
    fleet.release = (id, outcome) => {
        released.push({ proxy: members.get(id) ?? "?", outcome });
        return release(id, outcome);
    };
    gateway = new Gateway({
        port: 0,
        fleet,
        tokens: [{ name: "t", sha256: sha256(TOKEN).toString("hex"), scopes: ["lease"] }],
        metrics: createMetrics().gateway,
        log: pino({ level: "silent" }),
        ready: () => ({ ok: true }),
        waitMs: 0,
    });
    gatewayPort = (await gateway.listen()).port;
});

after(async () => {
    await gateway?.close(100);
    await origin?.close();
    await good?.close(true);
    await new Promise((r) => reset?.close(r));
    await new Promise((r) => eager?.close(r));
});

const auth = (pool: string) => `Basic ${Buffer.from(`${pool}:${TOKEN}`).toString("base64")}`;
const target = (p: string) => `http://127.0.0.1:${origin.port}${p}`;
const waitReleased = async (n: number) => {
    for (let i = 0; i < 100 && released.length < n; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(released.length, n, `released: ${JSON.stringify(released)}`);
};

/** A CONNECT through the gateway: the status line and headers of its answer (the tunnel is never used). */
function connect(pool: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
    return new Promise((resolve, reject) => {
        const req = http.request({
            host: "127.0.0.1",
            port: gatewayPort,
            method: "CONNECT",
            path: `127.0.0.1:${origin.port}`,
            headers: { "proxy-authorization": auth(pool) },
            agent: false,
        });
        req.on("connect", (res, socket, head) => {
            let body = head.toString("utf8"); // what came with the head
            socket.setEncoding("utf8").on("data", (c) => (body += c));
            socket.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
            if (res.statusCode === 200) socket.end();
        });
        req.on("error", reject).end();
    });
}

/** Checks a member failure's `Proxy-Status`, read as an RFC 8941 Item: `egress; error=…; next-hop="…"; details="…"`. */
function assertProxyStatus(field: string | string[] | undefined, error: string, member: string): void {
    assert.equal(typeof field, "string", "one Proxy-Status field");
    const item = parseItem(field as string);
    assert.deepEqual(item.value, { token: "egress" }, field as string);
    assert.deepEqual(item.params.error, { token: error }, field as string);
    assert.equal(item.params["next-hop"], member, field as string);
    assert.equal(typeof item.params.details, "string", field as string);
}

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
function fetchVia(
    pool: string,
    url: string,
    body?: Buffer,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
    return new Promise((resolve, reject) => {
        const req = http.request(
            {
                host: "127.0.0.1",
                port: gatewayPort,
                method: body ? "POST" : "GET",
                path: url,
                headers: { "proxy-authorization": auth(pool) },
                agent: false,
            },
            (res) => {
                let text = "";
                res.setEncoding("utf8")
                    .on("data", (c) => (text += c))
                    .on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
            },
        );
        req.on("error", reject);
        for (let i = 0; body && i < body.length; i += 64 * 1024) req.write(body.subarray(i, i + 64 * 1024));
        req.end();
    });
}

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
