/**
 * Retries on another member (issue 21, src/service/gateway/retries.ts), in process. Each pool pairs a
 * member that fails in one way with a working one (proxy-chain, as the local kind runs) joined after it,
 * so the failing member is the pool's first pick: one refuses connections (a closed loopback port), one
 * resets the connection in the middle of its answer's head, one accepts and never answers (the gateway's
 * member answer timeout is short here), one answers with its own proxy error (squid's error page marker).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import { Server as ProxyChainServer } from "proxy-chain";
import { freeLoopbackPort, listenLoopback } from "../helpers/net";
import { find, parseSamples } from "../helpers/metrics";
import {
    assertProxyStatus,
    fakeMember,
    gatewayClient,
    type RecordedRelease,
    startGatewayFleet,
    releasesSince,
} from "../helpers/gateway-fleet";
import type { Gateway } from "../../src/service/gateway";
import type { Registry } from "prom-client";

const TOKEN = "tok-retries-0123456789abcdef";
let gateway: Gateway;
let origin: Awaited<ReturnType<typeof listenLoopback>>;
let good: ProxyChainServer;
const fakes: Awaited<ReturnType<typeof fakeMember>>[] = [];
let released: RecordedRelease[] = [];
let registry: Registry;
let client: ReturnType<typeof gatewayClient>;

before(async () => {
    origin = await listenLoopback(
        http.createServer((req, res) => {
            let body = "";
            req.setEncoding("utf8")
                .on("data", (c) => (body += c))
                .on("end", () => res.end(`origin ${req.method} ${req.url} ${body}`));
        }),
    );
    good = new ProxyChainServer({ port: 0, host: "127.0.0.1", verbose: false });
    await good.listen();
    const refuse = `http://127.0.0.1:${await freeLoopbackPort()}`;
    const fake = async (answer: string, resetAfterMs?: number) => {
        const m = await fakeMember(answer, resetAfterMs);
        fakes.push(m);
        return m.url;
    };
    const bad: Record<string, string> = {
        refuse,
        reset: await fake("HTTP/1.1 200 OK\r\nContent-Le", 20),
        stall: await fake(""),
        owned: await fake(
            "HTTP/1.1 503 Service Unavailable\r\nX-Squid-Error: ERR_CONNECT_FAIL 111\r\nContent-Length: 0\r\n\r\n",
        ),
        post: refuse,
        put: refuse,
        flag: refuse,
        never: refuse,
        tunnel: refuse,
    };
    const goodUrl = `http://127.0.0.1:${good.port}`;
    const members = Object.entries(bad).flatMap(([pool, url]) => [
        { id: `${pool}-bad`, pool, url },
        { id: `${pool}-good`, pool, url: goodUrl },
    ]);
    // `twice`: two refusing members before the good one, to show a username cannot raise the bound.
    members.push(
        { id: "twice-bad", pool: "twice", url: refuse },
        { id: "twice-bad2", pool: "twice", url: refuse },
        { id: "twice-good", pool: "twice", url: goodUrl },
    );
    const pools = [...Object.keys(bad), "twice"].map((name) => ({
        name,
        ...(name === "never" && { gateway: { retries: 0 } }),
    }));
    // Short, so the stalling member costs little, but not so short that the working member (in this busy
    // process, beside other test files) misses it: at 300 ms it once timed out under load.
    const g = await startGatewayFleet({ token: TOKEN, members, pools, gateway: { memberAnswerMs: 1500 } });
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

const scrape = async (r: Registry) => parseSamples(await r.metrics());
const target = (p: string) => `http://127.0.0.1:${origin.port}${p}`;

const since = (from: number, n: number) => releasesSince(released, from, n);

for (const [pool, reason] of [
    ["refuse", "connection_refused"],
    ["reset", "connection_terminated"],
    ["stall", "connection_timeout"],
    ["owned", "member_error"],
] as const)
    test(`a body-less GET whose first member fails (${pool}) is served by another: X-Egress-Attempts 2, an error release then an ok one`, async () => {
        const from = released.length;
        const a = await client.fetch(pool, target(`/${pool}`));
        assert.equal(a.status, 200, a.body);
        assert.equal(a.body, `origin GET /${pool} `);
        assert.equal(a.headers["x-egress-attempts"], "2");
        assert.equal(a.headers["x-egress-proxy"], `${pool}-good`);
        assert.deepEqual(await since(from, 2), [`${pool}-bad:error`, `${pool}-good:ok`]);
        const s = await scrape(registry);
        assert.equal(find(s, "egress_gateway_retries_total", { pool, reason })[0]?.value, 1);
        assert.equal(find(s, "egress_gateway_attempts_total", { pool, kind: "http", outcome: "error" })[0]?.value, 1);
        assert.equal(find(s, "egress_gateway_attempts_total", { pool, kind: "http", outcome: "ok" })[0]?.value, 1);
        // The request counts once, with its last attempt's outcome.
        assert.equal(find(s, "egress_gateway_requests_total", { pool, kind: "http", outcome: "ok" })[0]?.value, 1);
        assert.equal(find(s, "egress_gateway_requests_total", { pool, kind: "http", outcome: "error" }).length, 0);
    });

test("a POST with a streamed body is not replayed: 502 with Proxy-Status from the first member, one attempt", async () => {
    const from = released.length;
    const a = await client.fetch("post", target("/post"), Buffer.from("a body the origin must see once"));
    assert.equal(a.status, 502);
    assertProxyStatus(a.headers["proxy-status"], "connection_refused", "post-bad");
    assert.equal(a.headers["x-egress-error"], "member_unreachable");
    assert.equal(a.headers["x-egress-attempts"], "1");
    assert.deepEqual(await since(from, 1), ["post-bad:error"]);
});

test("a small PUT with a Content-Length is read whole and replayed intact on the next member", async () => {
    const from = released.length;
    const a = await client.fetch("put", target("/put"), Buffer.from("twenty-two bytes, once"), {
        method: "PUT",
        headers: { "content-length": "22" },
    });
    assert.equal(a.status, 200, a.body);
    assert.equal(a.body, "origin PUT /put twenty-two bytes, once");
    assert.equal(a.headers["x-egress-attempts"], "2");
    assert.deepEqual(await since(from, 2), ["put-bad:error", "put-good:ok"]);
});

test("`_retries_0` gives the first failure back; a pool's `gateway.retries: 0` does the same", async () => {
    for (const [user, pool] of [
        ["flag_retries_0", "flag"],
        ["never", "never"],
    ]) {
        const from = released.length;
        const a = await client.fetch(user, target("/x"));
        assert.equal(a.status, 502, user);
        assertProxyStatus(a.headers["proxy-status"], "connection_refused", `${pool}-bad`);
        assert.equal(a.headers["x-egress-attempts"], "1", user);
        assert.deepEqual(await since(from, 1), [`${pool}-bad:error`], user);
    }
});

test("a username cannot raise the pool's bound: `_retries_3` in a pool of retries 1 stops after 2 attempts", async () => {
    const from = released.length;
    const a = await client.fetch("twice_retries_3", target("/x"));
    assert.equal(a.status, 502);
    assert.equal(a.headers["x-egress-attempts"], "2");
    assertProxyStatus(a.headers["proxy-status"], "connection_refused", "twice-bad2");
    assert.deepEqual(await since(from, 2), ["twice-bad:error", "twice-bad2:error"]);
});

test("CONNECT through a refusing member is retried on a good one before the tunnel opens", async () => {
    const from = released.length;
    const a = await client.connect("tunnel", `127.0.0.1:${origin.port}`);
    assert.equal(a.status, 200);
    assert.equal(a.headers["x-egress-attempts"], "2");
    assert.deepEqual(await since(from, 2), ["tunnel-bad:error", "tunnel-good:ok"]);
    const s = await scrape(registry);
    assert.equal(
        find(s, "egress_gateway_retries_total", { pool: "tunnel", reason: "connection_refused" })[0]?.value,
        1,
    );
    assert.equal(
        find(s, "egress_gateway_requests_total", { pool: "tunnel", kind: "connect", outcome: "ok" })[0]?.value,
        1,
    );
});
