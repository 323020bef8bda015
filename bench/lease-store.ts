/**
 * Lease+release pairs/s and p50/p99 for each lease store, in one run: the real service (createApp over
 * 1,000 synthetic members, bench/synthetic-service.ts) with the memory store, with the Redis store (one
 * process, a throwaway redis-server on loopback), and a bare node:http handler over the memory store as
 * the peer (the ceiling HTTP itself sets here). Printed as a table.
 *
 *   node dist/bench/lease-store.js [--seconds 5] [--concurrency 1,16,64] [--members 1000]
 *
 * Needs /usr/bin/redis-server (Debian's redis-server; scripts/install-test-deps.sh installs it).
 */
import * as os from "node:os";
import { parseArgs } from "node:util";
import { startRedis } from "../test/helpers/redis";
import { BenchResult, formatTable, runHttpBench } from "./leases";
import { forkSyntheticService, randomToken, SyntheticOptions } from "./synthetic-service";

async function main(): Promise<void> {
    const { values } = parseArgs({
        options: {
            seconds: { type: "string", default: "5" },
            concurrency: { type: "string", default: "1,16,64" },
            members: { type: "string", default: "1000" },
        },
    });
    const seconds = Math.min(10, Number(values.seconds));
    const concurrencies = values.concurrency!.split(",").map(Number);
    const members = Number(values.members);
    if (
        !(seconds > 0) ||
        !concurrencies.every((c) => Number.isInteger(c) && c > 0) ||
        !(Number.isInteger(members) && members > 0)
    )
        throw new Error("--seconds, --concurrency (a list) and --members must be positive numbers");
    const redis = await startRedis();
    const token = randomToken();
    const rows: BenchResult[] = [];
    try {
        const setups: [string, Partial<SyntheticOptions>][] = [
            ["memory store", {}],
            ["redis store, 1 process", { store: redis.url }],
            ["bare node:http, memory (peer)", { bare: true }],
        ];
        for (const [name, extra] of setups) {
            const child = await forkSyntheticService({ token, members, pools: 4, logLevel: "warn", ...extra });
            try {
                for (const concurrency of concurrencies) {
                    const r = await runHttpBench({
                        url: `http://127.0.0.1:${child.port}`,
                        token,
                        concurrency,
                        seconds,
                    });
                    r.mode = `${name}, ${r.mode}`;
                    rows.push(r);
                    process.stderr.write(".");
                }
            } finally {
                await child.stop();
            }
        }
    } finally {
        await redis.cleanup();
    }
    const cpus = os.cpus();
    console.log(
        `\nnode ${process.version}, ${cpus.length} × ${cpus[0]?.model ?? "?"}; ${members} members in 4 pools; ${seconds}s per row\n`,
    );
    console.log(formatTable(rows));
}

main().catch((err) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exitCode = 1;
});
