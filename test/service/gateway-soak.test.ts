/**
 * 100,000 requests through the gateway's forwarder (issue 21): plain requests over keep-alive client
 * connections, and every 100th a CONNECT tunnel, through two real forward-proxy members (proxy-chain,
 * as the local kind runs) to a loopback origin. Afterwards the heap (after a full GC) is where it was
 * after the warm-up, give or take what a leak of even 100 bytes per request would exceed, and the
 * process holds no more sockets, timers or listeners than then: no flight, agent socket or tunnel is
 * left behind. Every request is answered 200 and every lease is released.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import * as v8 from "node:v8";
import * as vm from "node:vm";
import { Server as ProxyChainServer } from "proxy-chain";
import { connectViaProxy, listenLoopback } from "../helpers/net";
import { gatewayClient, startGatewayFleet } from "../helpers/gateway-fleet";
import type { Gateway } from "../../src/service/gateway";

const TOKEN = "tok-soak-0123456789abcdef";
const TOTAL = 100_000;
const WARMUP = 5_000;
const CONCURRENCY = 8;
v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

let origin: Awaited<ReturnType<typeof listenLoopback>>;
const members: ProxyChainServer[] = [];
let gateway: Gateway;
let port = 0;
let released: { outcome: string }[] = [];

before(async () => {
    origin = await listenLoopback(http.createServer((req, res) => res.end(`ok ${req.url}`)));
    for (let i = 0; i < 2; i++) {
        const m = new ProxyChainServer({ port: 0, host: "127.0.0.1", verbose: false });
        await m.listen();
        members.push(m);
    }
    const g = await startGatewayFleet({
        token: TOKEN,
        members: members.map((m, i) => ({ id: `soak-${i}`, pool: "soak", url: `http://127.0.0.1:${m.port}` })),
        pools: [{ name: "soak" }],
        gateway: { waitMs: 5000 },
    });
    gateway = g.gateway;
    port = g.port;
    released = g.released;
});
after(async () => {
    await gateway?.close(100);
    for (const m of members) await m.close(true);
    await origin?.close();
});

/** What the process holds open, by kind (sockets, timers, …), as node reports it. */
function resources(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const r of process.getActiveResourcesInfo()) out[r] = (out[r] ?? 0) + 1;
    return out;
}

test(
    "100k requests and 1k tunnels through the gateway: the heap and the open handles stay flat",
    { timeout: 900_000 },
    async () => {
        const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
        const { auth } = gatewayClient(port, TOKEN);
        const proxyAuth = auth("soak");
        const one = (i: number) =>
            new Promise<void>((resolve, reject) => {
                if (i % 100 === 99) {
                    connectViaProxy(port, origin.port, `/t${i}`, 10_000, { "proxy-authorization": proxyAuth }).then(
                        (r) => {
                            if (r.connectStatus !== 200 || r.body !== `ok /t${i}`)
                                return reject(new Error(`tunnel ${i}: ${r.connectStatus} ${r.body}`));
                            resolve();
                        },
                        reject,
                    );
                    return;
                }
                const req = http.request(
                    {
                        host: "127.0.0.1",
                        port,
                        path: `${origin.url}/r${i}`,
                        agent,
                        headers: { "proxy-authorization": proxyAuth },
                    },
                    (res) => {
                        let body = "";
                        res.setEncoding("utf8").on("data", (c) => (body += c));
                        res.on("end", () =>
                            res.statusCode === 200 && body === `ok /r${i}`
                                ? resolve()
                                : reject(new Error(`request ${i}: ${res.statusCode} ${body}`)),
                        );
                    },
                );
                req.on("error", reject);
                req.end();
            });
        let next = 0;
        const run = async (upTo: number) => {
            await Promise.all(
                Array.from({ length: CONCURRENCY }, async () => {
                    while (next < upTo) await one(next++);
                }),
            );
            // The test's own record of releases is not the gateway's memory: checked, then dropped.
            assert.ok(
                released.every((r) => r.outcome === "ok"),
                JSON.stringify(released.find((r) => r.outcome !== "ok")),
            );
            released.splice(0);
        };
        const settle = async () => {
            await new Promise((r) => setTimeout(r, 300));
            gc();
            gc();
        };

        await run(WARMUP);
        await settle();
        const heap0 = process.memoryUsage().heapUsed;
        const open0 = resources();
        const t0 = Date.now();
        await run(TOTAL);
        const seconds = (Date.now() - t0) / 1000;
        await settle();
        const heap1 = process.memoryUsage().heapUsed;
        const open1 = resources();
        const grown = heap1 - heap0;
        console.log(
            `${TOTAL - WARMUP} requests in ${seconds.toFixed(1)} s; heap ${(heap0 / 1e6).toFixed(1)} → ${(heap1 / 1e6).toFixed(1)} MB; open before ${JSON.stringify(open0)}, after ${JSON.stringify(open1)}`,
        );
        // 95k requests: a leak of 100 bytes each would be 9.5 MB.
        assert.ok(grown < 8e6, `the heap grew ${(grown / 1e6).toFixed(1)} MB over ${TOTAL - WARMUP} requests`);
        for (const [kind, n] of Object.entries(open1))
            assert.ok(
                n <= (open0[kind] ?? 0) + CONCURRENCY,
                `${kind}: ${n} open after, ${open0[kind] ?? 0} after the warm-up (each side's keep-alive pool holds at most ${CONCURRENCY})`,
            );
        agent.destroy();
    },
);
