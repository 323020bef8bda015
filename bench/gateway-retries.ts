/**
 * What retries on another member buy (issue 21): 1 of 5 members refuses connections (a closed loopback
 * port), the other 4 are proxy-chain members; the share of GETs that succeed through the gateway with the
 * pool's `gateway.retries` at 0 and at 1. In one process (gateway, members, origin and load share an
 * event loop): it measures outcomes, not speed — bench/gateway.ts' other rows are the speed.
 *
 *   node dist/bench/gateway-retries.js [--requests 1000] [--concurrency 4]
 *
 * Loopback only. Printed as a table; bench/gateway.ts prints it too, after its own.
 */
import * as http from "node:http";
import { parseArgs } from "node:util";
import { Server as ProxyChainServer } from "proxy-chain";
import { freeLoopbackPort, listenLoopback } from "../test/helpers/net";
import { gatewayClient, startGatewayFleet } from "../test/helpers/gateway-fleet";
import { benchTable } from "./table";

export interface RetryRow {
    retries: number;
    requests: number;
    ok: number;
    attempts: number;
}

/** `requests` GETs, `concurrency` at a time, through a 5-member pool (1 refusing) per `retries` setting. */
export async function retryRows(requests = 1000, concurrency = 4): Promise<RetryRow[]> {
    const origin = await listenLoopback(http.createServer((_req, res) => res.end("page")));
    const members: ProxyChainServer[] = [];
    const TOKEN = "bench-retries-0123456789abcdef";
    const refuse = `http://127.0.0.1:${await freeLoopbackPort()}`;
    const rows: RetryRow[] = [];
    try {
        for (let i = 0; i < 4; i++) {
            const m = new ProxyChainServer({ port: 0, host: "127.0.0.1", verbose: false });
            await m.listen();
            members.push(m);
        }
        const pools = [0, 1].map((retries) => ({ name: `r${retries}`, gateway: { retries } }));
        const g = await startGatewayFleet({
            token: TOKEN,
            pools,
            members: pools.flatMap((p) => [
                { id: `${p.name}-refuses`, pool: p.name, url: refuse },
                ...members.map((m, i) => ({ id: `${p.name}-${i}`, pool: p.name, url: `http://127.0.0.1:${m.port}` })),
            ]),
            // Enough waiting for the pool's 5 members to be shared by `concurrency` clients without 503s.
            gateway: { waitMs: 5000 },
        });
        const client = gatewayClient(g.port, TOKEN);
        try {
            for (const p of pools) {
                const row: RetryRow = { retries: p.gateway.retries, requests, ok: 0, attempts: 0 };
                let sent = 0;
                const loop = async () => {
                    while (sent < requests) {
                        sent++;
                        const a = await client.fetch(p.name, `${origin.url}/page`).catch(() => undefined);
                        if (a?.status === 200) row.ok++;
                        row.attempts += Number(a?.headers["x-egress-attempts"] ?? 1);
                    }
                };
                await Promise.all(Array.from({ length: concurrency }, loop));
                rows.push(row);
            }
        } finally {
            await g.gateway.close(100);
        }
    } finally {
        for (const m of members) await m.close(true);
        await origin.close();
    }
    return rows;
}

export function retryTable(rows: readonly RetryRow[]): string {
    return benchTable(
        ["1 of 5 members refuses", "requests", "succeeded", "share", "attempts/request"],
        rows.map((r) => [
            `gateway.retries ${r.retries}`,
            String(r.requests),
            String(r.ok),
            `${((100 * r.ok) / r.requests).toFixed(1)}%`,
            (r.attempts / r.requests).toFixed(2),
        ]),
    );
}

if (require.main === module) {
    const { values } = parseArgs({
        options: { requests: { type: "string", default: "1000" }, concurrency: { type: "string", default: "4" } },
    });
    retryRows(Number(values.requests), Number(values.concurrency)).then(
        (rows) => {
            console.log(retryTable(rows));
            process.exit(0);
        },
        (e) => {
            console.error(e);
            process.exit(1);
        },
    );
}
