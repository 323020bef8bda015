/**
 * bench/gateway's own logic: the squid parent config (and that squid, run with it, rotates over the
 * members and tunnels CONNECT through them), answer framing on a raw socket, quantiles and the goals.
 * squid is Debian's (scripts/install-test-deps.sh); missing, the test fails.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import { Server as ProxyChainServer } from "proxy-chain";
import { medianRow, quantile, Row } from "../../bench/gateway/load";
import { GATEWAY, goals, MEMBER, REDIS_ROW, SQUID_ROW } from "../../bench/gateway/report";
import { squidParentConf, startSquid } from "../../bench/gateway/squid";
import { answerLength, openTunnel } from "../../bench/gateway/wire";
import { ensureTestPackages } from "../helpers/deps";
import { listenLoopback, requestViaProxy } from "../helpers/net";

test("squidParentConf: every member a named round-robin parent, never direct, no cache, state in its dir", () => {
    const conf = squidParentConf({
        port: 4000,
        members: ["http://127.0.0.1:5001", "http://127.0.0.1:5002"],
        dir: "/d",
    });
    const lines = conf.split("\n");
    assert.ok(lines.includes("http_port 127.0.0.1:4000"));
    assert.ok(lines.includes("cache_peer 127.0.0.1 parent 5001 0 no-query no-digest round-robin name=member0"));
    assert.ok(lines.includes("cache_peer 127.0.0.1 parent 5002 0 no-query no-digest round-robin name=member1"));
    for (const l of ["never_direct allow all", "http_access allow localhost", "cache deny all", "coredump_dir /d"])
        assert.ok(lines.includes(l), l);
    assert.ok(lines.indexOf("http_access allow localhost") < lines.indexOf("http_access deny all"));
});

test("squid with that config rotates GETs over the members and tunnels CONNECT through them", async (t) => {
    ensureTestPackages();
    const origin = await listenLoopback(
        http.createServer((_req, res) => res.writeHead(200, { "content-length": 2 }).end("ok")),
    );
    t.after(() => origin.close());
    const seen = [0, 0];
    const members = await Promise.all(
        seen.map(async (_, i) => {
            const m = new ProxyChainServer({
                port: 0,
                host: "127.0.0.1",
                verbose: false,
                prepareRequestFunction: () => {
                    seen[i]++;
                    return {};
                },
            });
            await m.listen();
            t.after(() => m.close(true));
            return `http://127.0.0.1:${m.port}`;
        }),
    );
    const squid = await startSquid(members, `${origin.url}/probe`);
    t.after(() => squid.stop());
    const before = [...seen];
    for (let i = 0; i < 6; i++) assert.equal((await requestViaProxy(squid.port, `${origin.url}/p${i}`)).status, 200);
    assert.deepEqual(
        seen.map((n, i) => n - before[i]),
        [3, 3],
    );
    const tunnel = await openTunnel(squid.port, `127.0.0.1:${origin.port}`);
    assert.ok(typeof tunnel !== "number", `CONNECT through squid answered ${String(tunnel)}`);
    assert.equal(await tunnel.get(`127.0.0.1:${origin.port}`, "/in-tunnel"), 200);
    assert.equal(await tunnel.get(`127.0.0.1:${origin.port}`, "/again"), 200);
    tunnel.close();
});

test("answerLength: a whole answer is its head and its Content-Length body; a CONNECT answer its head", () => {
    const head = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n";
    assert.equal(answerLength(Buffer.from(head + "ab"), false), -1);
    assert.equal(answerLength(Buffer.from(head + "abcHTTP/1.1"), false), head.length + 3);
    assert.equal(answerLength(Buffer.from("HTTP/1.1 200 Connection established\r\n\r\n"), true), 39);
    assert.equal(answerLength(Buffer.from("HTTP/1.1 200 OK\r\n"), true), -1);
});

test("quantile: nearest rank below, NaN when empty", () => {
    const a = Float64Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert.equal(quantile(a, 0.5), 5);
    assert.equal(quantile(a, 0.99), 9);
    assert.equal(quantile(a, 1), 10);
    assert.ok(Number.isNaN(quantile([], 0.5)));
});

test("goals (issue 34): met and not met from the gateway's rows against direct, squid and the Redis row; absent counts not measured", () => {
    const row = (path: string, concurrency: number, rate: number, p50: number, cpuProxy?: number): Row => ({
        path,
        traffic: "HTTP",
        concurrency,
        count: rate,
        rate,
        p50,
        p99: p50,
        unavailable: 0,
        failed: 0,
        cpuProxy,
    });
    const rows = [
        row(MEMBER, 1, 1000, 0.5),
        row(GATEWAY, 1, 850, 0.6, 120),
        row(SQUID_ROW, 1, 700, 0.7),
        row(REDIS_ROW, 1, 700, 0.7),
        row(MEMBER, 16, 1000, 1),
        row(GATEWAY, 16, 500, 2, 200),
        row(SQUID_ROW, 16, 600, 1.5),
        row(REDIS_ROW, 16, 300, 3),
    ];
    const byGoal = new Map(goals(rows, ["HTTP"]).map((g) => [g.goal, g]));
    assert.equal(byGoal.get("HTTP, 1 client: the gateway adds ≤ 0.15 ms at p50")?.met, true);
    assert.equal(byGoal.get("HTTP, 1 client: the gateway keeps ≥ 80% of direct")?.met, true);
    assert.equal(byGoal.get("HTTP, 4 clients: the gateway keeps ≥ 60% of direct")?.met, undefined);
    assert.equal(byGoal.get("HTTP, 1 client: the gateway's CPU ≤ 150 µs per request")?.met, true);
    assert.equal(byGoal.get("HTTP, 16 clients: the gateway's CPU ≤ 150 µs per request")?.met, false);
    assert.equal(
        byGoal.get("HTTP, 1 client: the gateway on the Redis store keeps ≥ 70% of the memory store's")?.met,
        true,
    );
    assert.equal(
        byGoal.get("HTTP, 16 clients: the gateway on the Redis store keeps ≥ 70% of the memory store's")?.measured,
        "60% (300 vs 500/s)",
    );
    assert.equal(byGoal.get("HTTP, 1 client: the gateway beats squid")?.met, true);
    assert.equal(byGoal.get("HTTP, 16 clients: the gateway beats squid")?.met, false);
    assert.equal(byGoal.get("HTTP, 16 clients: the gateway beats squid")?.measured, "500 vs 600/s");
});

test("a row measured in rounds: medians of rate, latency and CPU; counts summed", () => {
    const r = (rate: number, p50: number, cpuProxy?: number): Row => ({
        path: GATEWAY,
        traffic: "HTTP",
        concurrency: 1,
        count: 10,
        rate,
        p50,
        p99: p50 * 2,
        unavailable: 1,
        failed: 0,
        cpuProxy,
    });
    const m = medianRow([r(900, 0.9, 300), r(100, 5, undefined), r(500, 1.1, 200)]);
    assert.equal(m.rate, 500);
    assert.equal(m.p50, 1.1);
    assert.equal(m.p99, 2.2);
    assert.equal(m.cpuProxy, 200, "the lower middle of the rounds that measured it");
    assert.equal(m.count, 30);
    assert.equal(m.unavailable, 3);
});
