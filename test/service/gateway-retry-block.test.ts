/**
 * Retries on a block (issue 21, a pool's `gateway.retryOnBlock`), in process. A "blocking" member is a
 * loopback server that answers every request with what an origin sends a blocked address: a 403, or a
 * 200 carrying the block header the service's rules name. Each pool puts blocking members first (they
 * are the pool's first picks), then a working member (proxy-chain, as the local kind runs).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import { Server as ProxyChainServer } from "proxy-chain";
import { listenLoopback } from "../helpers/net";
import { find, parseSamples } from "../helpers/metrics";
import {
    fakeMember,
    gatewayClient,
    type RecordedRelease,
    startGatewayFleet,
    releasesSince,
} from "../helpers/gateway-fleet";
import type { Gateway } from "../../src/service/gateway";
import type { Registry } from "prom-client";

const TOKEN = "tok-retry-block-0123456789abcdef";
const FORBIDDEN = "HTTP/1.1 403 Forbidden\r\nContent-Length: 7\r\n\r\nblocked";
const CHALLENGE = "HTTP/1.1 200 OK\r\nCf-Mitigated: challenge\r\nContent-Length: 9\r\n\r\nchallenge";
let gateway: Gateway;
let origin: Awaited<ReturnType<typeof listenLoopback>>;
let good: ProxyChainServer;
const fakes: Awaited<ReturnType<typeof fakeMember>>[] = [];
let released: RecordedRelease[] = [];
let registry: Registry;
let client: ReturnType<typeof gatewayClient>;
let originSaw = 0;

before(async () => {
    origin = await listenLoopback(
        http.createServer((req, res) => {
            originSaw++;
            req.resume().on("end", () => res.end(`origin ${req.method} ${req.url}`));
        }),
    );
    good = new ProxyChainServer({ port: 0, host: "127.0.0.1", verbose: false });
    await good.listen();
    const fake = async (answer: string) => {
        const m = await fakeMember(answer);
        fakes.push(m);
        return m.url;
    };
    // One fake per member: a fake answers a connection's first request only, and the gateway keeps
    // connections to a member alive for the next request.
    const forbidden = () => fake(FORBIDDEN);
    const challenge = () => fake(CHALLENGE);
    const goodUrl = `http://127.0.0.1:${good.port}`;
    // pool → [its blocking members' urls, its gateway settings, whether it ends with a good member]
    const pools: Record<string, [string[], { retryOnBlock?: number; retries?: number }, boolean]> = {
        once: [[await forbidden()], { retryOnBlock: 1 }, true],
        header: [[await challenge()], { retryOnBlock: 1 }, true],
        relay: [[await forbidden()], {}, true],
        post: [[await forbidden()], { retryOnBlock: 1 }, true],
        flag: [[await forbidden()], { retryOnBlock: 1 }, true],
        everyone: [[await forbidden(), await forbidden()], { retryOnBlock: 2 }, false],
        separate: [[await forbidden()], { retryOnBlock: 1, retries: 0 }, true],
    };
    const members = Object.entries(pools).flatMap(([pool, [bad, , withGood]]) => [
        ...bad.map((url, i) => ({ id: `${pool}-blocked${i}`, pool, url })),
        ...(withGood ? [{ id: `${pool}-good`, pool, url: goodUrl }] : []),
    ]);
    const g = await startGatewayFleet({
        token: TOKEN,
        members,
        pools: Object.entries(pools).map(([name, [, gw]]) => ({ name, gateway: { retries: 1, ...gw } })),
        gateway: {
            memberAnswerMs: 2000,
            blockRules: { statuses: [403, 429], headers: [{ name: "cf-mitigated", contains: "challenge" }] },
        },
    });
    ({ gateway, released } = g);
    registry = g.metrics.registry;
    client = gatewayClient(g.port, TOKEN);
});

after(async () => {
    await gateway?.close(100);
    await origin?.close();
    await good?.close(true);
    for (const f of fakes) await f.close();
});

const target = (p: string) => `http://127.0.0.1:${origin.port}${p}`;
const since = (from: number, n: number) => releasesSince(released, from, n);

test("retryOnBlock 1: a GET the origin blocks (403) is asked again through another member; the blocked member is released `blocked`", async () => {
    const from = released.length;
    const a = await client.fetch("once", target("/once"));
    assert.equal(a.status, 200, a.body);
    assert.equal(a.body, "origin GET /once");
    assert.equal(a.headers["x-egress-attempts"], "2");
    assert.equal(a.headers["x-egress-proxy"], "once-good");
    assert.deepEqual(await since(from, 2), ["once-blocked0:blocked", "once-good:ok"]);
    const s = parseSamples(await registry.metrics());
    assert.equal(find(s, "egress_gateway_retries_total", { pool: "once", reason: "blocked" })[0]?.value, 1);
    assert.equal(find(s, "egress_gateway_requests_total", { pool: "once", kind: "http", outcome: "ok" })[0]?.value, 1);
});

test("a block marked by a header rule (a 200 challenge page) is retried the same way", async () => {
    const from = released.length;
    const a = await client.fetch("header", target("/h"));
    assert.equal(a.status, 200);
    assert.equal(a.body, "origin GET /h");
    assert.equal(a.headers["x-egress-attempts"], "2");
    assert.deepEqual(await since(from, 2), ["header-blocked0:blocked", "header-good:ok"]);
});

test("without retryOnBlock (the default) the origin's 403 is relayed as it came, once", async () => {
    const from = released.length;
    const a = await client.fetch("relay", target("/r"));
    assert.equal(a.status, 403);
    assert.equal(a.body, "blocked");
    assert.equal(a.headers["x-egress-attempts"], "1");
    assert.equal(a.headers["x-egress-proxy"], "relay-blocked0");
    assert.deepEqual(await since(from, 1), ["relay-blocked0:blocked"]);
});

test("a blocked POST is not sent again: the origin may have acted on it (even with no body)", async () => {
    const from = released.length;
    const a = await client.fetch("post", target("/p"), Buffer.alloc(0), {
        method: "POST",
        headers: { "content-length": "0" },
    });
    assert.equal(a.status, 403);
    assert.equal(a.headers["x-egress-attempts"], "1");
    assert.deepEqual(await since(from, 1), ["post-blocked0:blocked"]);
});

test("`_retries_0` in the username lowers the block budget too", async () => {
    const from = released.length;
    const a = await client.fetch("flag_retries_0", target("/f"));
    assert.equal(a.status, 403);
    assert.equal(a.headers["x-egress-attempts"], "1");
    assert.deepEqual(await since(from, 1), ["flag-blocked0:blocked"]);
});

test("when every member is blocked the last block is relayed after trying each once: no loop, no invented error", async () => {
    const from = released.length;
    const a = await client.fetch("everyone", target("/e"));
    assert.equal(a.status, 403);
    assert.equal(a.body, "blocked");
    assert.equal(a.headers["x-egress-attempts"], "2");
    assert.deepEqual(await since(from, 2), ["everyone-blocked0:blocked", "everyone-blocked1:blocked"]);
});

test("the block budget is its own: `retries: 0` (member failures) does not stop a block retry", async () => {
    const from = released.length;
    const saw = originSaw;
    const a = await client.fetch("separate", target("/s"));
    assert.equal(a.status, 200);
    assert.equal(a.headers["x-egress-attempts"], "2");
    assert.deepEqual(await since(from, 2), ["separate-blocked0:blocked", "separate-good:ok"]);
    // Only the good member reached the real origin (the blocking ones answer for it).
    assert.equal(originSaw - saw, 1);
});
