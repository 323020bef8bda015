/**
 * Requests the gateway cannot read get standard answers (issue 21), as JSON with `X-Egress-Error` and an
 * RFC 9209 `Proxy-Status`, then a closed connection: 200 KB of headers → 431 `headers_too_large`; a
 * client that stops in the middle of its head → 408 `request_timeout` once `headersTimeoutMs` ran out
 * (1 s here), not a connection held for ever or reset without a word. A slow body is not cut by it.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import { Server as ProxyChainServer } from "proxy-chain";
import { listenLoopback, rawHttp } from "../helpers/net";
import { parseItem } from "../helpers/structured-field";
import { gatewayClient, startGatewayFleet } from "../helpers/gateway-fleet";
import type { Gateway } from "../../src/service/gateway";

const TOKEN = "tok-protocol-0123456789abcdef";
let origin: Awaited<ReturnType<typeof listenLoopback>>;
let member: ProxyChainServer;
let gateway: Gateway;
let port = 0;

before(async () => {
    origin = await listenLoopback(
        http.createServer((req, res) => {
            let n = 0;
            req.on("data", (c: Buffer) => (n += c.length)).on("end", () => res.end(`got ${n}`));
        }),
    );
    member = new ProxyChainServer({ port: 0, host: "127.0.0.1", verbose: false });
    await member.listen();
    const g = await startGatewayFleet({
        token: TOKEN,
        members: [{ id: "p-0", pool: "p", url: `http://127.0.0.1:${member.port}` }],
        pools: [{ name: "p" }],
        gateway: { headersTimeoutMs: 1000 },
    });
    gateway = g.gateway;
    port = g.port;
});
after(async () => {
    await gateway?.close(100);
    await member?.close(true);
    await origin?.close();
});

function checkProxyStatus(value: string, details: string): void {
    const item = parseItem(value);
    assert.deepEqual(item.value, { token: "egress" });
    assert.deepEqual(item.params.error, { token: "http_request_error" });
    assert.equal(item.params.details, details);
}

test("200 KB of request headers: 431 headers_too_large, with Proxy-Status, and the connection closed", async () => {
    const auth = gatewayClient(port, TOKEN).auth("p");
    const big = "x".repeat(200 * 1024);
    const r = await rawHttp(
        port,
        `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Authorization: ${auth}\r\nX-Big: ${big}\r\n\r\n`,
        5000,
    );
    assert.equal(r.status, 431, JSON.stringify(r).slice(0, 300));
    assert.equal(r.headers["x-egress-error"], "headers_too_large");
    assert.equal(JSON.parse(r.body).error.code, "headers_too_large");
    checkProxyStatus(r.headers["proxy-status"], "headers_too_large");
    assert.ok(r.closedByServer, "the connection is closed");
});

test("a client that stops mid-head: 408 request_timeout after headersTimeoutMs, then closed", async () => {
    const t0 = Date.now();
    const r = await rawHttp(
        port,
        `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: `,
        10_000,
    );
    const took = Date.now() - t0;
    assert.equal(r.status, 408, JSON.stringify(r).slice(0, 300));
    assert.equal(JSON.parse(r.body).error.code, "request_timeout");
    checkProxyStatus(r.headers["proxy-status"], "request_timeout");
    assert.ok(r.closedByServer, "the connection is closed");
    assert.ok(took >= 900 && took < 5000, `answered ${took} ms after the head stopped (headersTimeoutMs 1000)`);
});

test("a slow body is not cut by the head's deadline: 3 s of trickled body arrive whole", async () => {
    const auth = gatewayClient(port, TOKEN).auth("p");
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(
            {
                host: "127.0.0.1",
                port,
                method: "POST",
                path: `http://127.0.0.1:${origin.port}/slow`,
                headers: { "proxy-authorization": auth, "transfer-encoding": "chunked" },
            },
            (res) => {
                let body = "";
                res.setEncoding("utf8").on("data", (c) => (body += c));
                res.on("end", () => resolve({ status: res.statusCode!, body }));
            },
        );
        req.on("error", reject);
        let sent = 0;
        const tick = setInterval(() => {
            req.write("0123456789");
            if (++sent === 6) {
                clearInterval(tick);
                req.end();
            }
        }, 500);
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.body, "got 60");
});
