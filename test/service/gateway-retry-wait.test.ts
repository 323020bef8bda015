/**
 * A retry waits for a busy pool (src/service/gateway/retries.ts): a member fails a request while every
 * other member is busy, and the retry waits in the request's line for the gateway's wait bound, as a first
 * attempt does, instead of answering 502 at once. In process, with a real proxy-chain member (`a-good`,
 * one gateway request at a time: `gateway.memberConcurrency` 1 by default) and a member that refuses
 * connections (`b-bad`, a closed loopback port); the origin takes 600 ms, so `a-good` is busy when the
 * second request meets `b-bad`. With waiting off (`waitMs` 0) the same request is answered 502.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import { Server as ProxyChainServer } from "proxy-chain";
import { freeLoopbackPort, listenLoopback } from "../helpers/net";
import { gatewayClient, startGatewayFleet } from "../helpers/gateway-fleet";
import type { Gateway } from "../../src/service/gateway";

const TOKEN = "tok-retry-wait-0123456789abcdef";
let origin: Awaited<ReturnType<typeof listenLoopback>>;
let good: ProxyChainServer;
let members: { id: string; pool: string; url: string }[];
const gateways: Gateway[] = [];

before(async () => {
    origin = await listenLoopback(http.createServer((req, res) => setTimeout(() => res.end(`page ${req.url}`), 600)));
    good = new ProxyChainServer({ port: 0, host: "127.0.0.1", verbose: false });
    await good.listen();
    members = [
        { id: "a-good", pool: "w", url: `http://127.0.0.1:${good.port}` },
        { id: "b-bad", pool: "w", url: `http://127.0.0.1:${await freeLoopbackPort()}` },
    ];
});
after(async () => {
    for (const g of gateways) await g.close(0);
    await good?.close(true);
    await origin?.close();
});

/** Two requests: the first takes `a-good`, the second (100 ms later) meets `b-bad` and is retried. */
async function twoRequests(waitMs: number) {
    const g = await startGatewayFleet({ token: TOKEN, members, pools: [{ name: "w" }], gateway: { waitMs } });
    gateways.push(g.gateway);
    const client = gatewayClient(g.port, TOKEN);
    const first = client.fetch("w", `${origin.url}/1`);
    await new Promise((r) => setTimeout(r, 100));
    const second = await client.fetch("w", `${origin.url}/2`);
    return { first: await first, second };
}

test("waiting on: the retry waits for the busy member and is answered 200 after 2 attempts", async () => {
    const { first, second } = await twoRequests(5_000);
    assert.equal(first.status, 200, first.body);
    assert.equal(first.headers["x-egress-proxy"], "a-good");
    assert.equal(second.status, 200, second.body);
    assert.equal(second.headers["x-egress-proxy"], "a-good");
    assert.equal(second.headers["x-egress-attempts"], "2");
});

test("waiting off: the same retry finds nobody free and the member's failure is answered", async () => {
    const { first, second } = await twoRequests(0);
    assert.equal(first.status, 200, first.body);
    assert.equal(second.status, 502, second.body);
    assert.match(String(second.headers["proxy-status"]), /error=connection_refused; next-hop="b-bad"/);
});
