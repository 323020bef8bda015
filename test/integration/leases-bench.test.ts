/**
 * The benchmark's reusable parts: the HTTP client against a minimal loopback stand-in for the lease
 * routes (the real app has its own tests), the in-process runner, the table, and the loopback guard.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import * as net from "node:net";
import { formatTable, runHttpBench, runInProcessBench } from "../../bench/leases";
import { formatSessionTable, runSessionBench } from "../../bench/sessions";
import { LeaseManager } from "../../src/service/leases";

test("runHttpBench drives acquire/release pairs over keep-alive connections", async () => {
    const leases = new LeaseManager({ initiallyEligible: true });
    leases.setMembers(
        Array.from({ length: 50 }, (_, i) => ({ id: `web-${i}`, pool: "web" })),
        { web: { cooldownSeconds: 0 } },
    );
    const sockets = new Set<net.Socket>();
    const server = http.createServer((req, res) => {
        sockets.add(req.socket);
        let body = "";
        req.on("data", (c) => (body += c));
        req.on("end", () => {
            if (req.headers.authorization !== "Bearer t0ken") return void res.writeHead(401).end();
            const m = /^\/v1\/leases\/([^/]+)\/release$/.exec(req.url ?? "");
            if (req.url === "/v1/leases") {
                const r = leases.acquire(JSON.parse(body));
                if (!r.ok) return void res.writeHead(503, { "retry-after": String(r.retryAfterSeconds) }).end("{}");
                return void res
                    .writeHead(201, { "content-type": "application/json" })
                    .end(JSON.stringify({ lease: r.lease }));
            }
            if (m && JSON.parse(body).outcome === "ok") {
                const r = leases.release(decodeURIComponent(m[1]), "ok");
                return void res.writeHead(r.ok ? 200 : 404).end(JSON.stringify(r));
            }
            res.writeHead(404).end();
        });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as net.AddressInfo).port;
    try {
        const r = await runHttpBench({ url: `http://127.0.0.1:${port}`, token: "t0ken", concurrency: 4, seconds: 0.5 });
        // A check that the harness works, not of speed (bench/ measures that): every client got through at
        // least one pair, even on a machine busy with other test files.
        assert.ok(r.pairs >= 4, `only ${r.pairs} pairs`);
        assert.equal(r.unavailable, 0);
        assert.ok(r.p50Ms > 0 && r.p50Ms <= r.p99Ms && r.p99Ms <= r.maxMs);
        assert.ok(sockets.size <= 4, `keep-alive: ${sockets.size} connections for 4 clients`);
        assert.equal(leases.activeLeases, 0);
        await assert.rejects(
            runHttpBench({ url: `http://127.0.0.1:${port}`, token: "wrong", concurrency: 1, seconds: 0.2 }),
            { message: "POST /v1/leases answered 401: undefined" },
        );
    } finally {
        server.closeAllConnections();
        server.close();
    }
});

test("runHttpBench refuses anything but loopback http", async () => {
    await assert.rejects(runHttpBench({ url: "http://10.0.0.1:8080", token: "x" }), {
        message: "runHttpBench: --url must be http:// on loopback (127.0.0.1), got http://10.0.0.1:8080",
    });
    await assert.rejects(runHttpBench({ url: "https://127.0.0.1:8080", token: "x" }), /loopback/);
});

test("in-process runner and table", () => {
    const r = runInProcessBench({ members: 100, seconds: 0.1, targets: 1000 });
    assert.ok(r.pairs > 0, `${r.pairs} pairs`);
    assert.equal(r.mode, "in-process, 100 members, 1000 targets");
    const table = formatTable([r]).split("\n");
    assert.equal(table.length, 3);
    assert.match(table[0], /^mode\s+pairs\/s\s+p50 ms\s+p99 ms\s+max ms\s+pairs\s+503s$/);
});

test("session bench: with nothing else held every known session gets its member back; the table has both kinds", () => {
    const alone = runSessionBench({ members: 20, sessions: 100, held: 0, seconds: 0.1 });
    assert.ok(alone.sessionAcquires > 100 && alone.plain.acquires > 100);
    assert.equal(alone.rebound, 0);
    assert.equal(alone.hitRatio, 1);
    const busy = runSessionBench({ members: 20, sessions: 100, held: 10, seconds: 0.1 });
    assert.ok(busy.rebound > 0 && busy.hitRatio < 1, "held members move the sessions bound to them");
    assert.equal(busy.hits + busy.rebound + busy.fresh, busy.sessionAcquires);
    const table = formatSessionTable([alone, busy]).split("\n");
    assert.equal(table.length, 4);
    assert.match(
        table[0],
        /^members \/ sessions \/ held\s+churn\s+session acq\s+hit ratio\s+hits\s+rebound\s+new\s+503s\s+session p50 µs\s+session p99 µs\s+plain acq\s+plain p50 µs\s+plain p99 µs$/,
    );
    assert.match(table[2], /^20 \/ 100 \/ 0 .* 100\.0% /);
});
