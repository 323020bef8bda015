/**
 * Lease+release pairs/s and p50/p99 for each lease store, in one run: the real service (createApp over
 * 1,000 synthetic members, bench/synthetic-service.ts) with the memory store, with the Redis store (one
 * process, a throwaway redis-server on loopback; again with each grant confirmed by its replica, WAIT 1),
 * with the Redis store in three processes behind a real
 * HAProxy (deploy/haproxy.cfg, as replicas run), and a bare node:http handler over the memory store as
 * the peer (the ceiling HTTP itself sets here). Printed as a table.
 *
 *   node dist/bench/lease-store.js [--seconds 5] [--concurrency 1,16,64] [--members 1000] [--commandstats] [--rate N]
 *
 * Every row also reports the CPU time per pair of the service process(es) and of redis-server
 * (/proc/<pid>/stat over the timed part; the bench client's own is not counted): steadier than pairs/s
 * when other jobs share the machine. HAProxy's CPU is not in the three-process row. In a closed loop it
 * also falls as throughput rises (more requests share each socket write and read); `--rate N` paces
 * the clients to N pairs/s together, so two builds' CPU per pair compare at the same load.
 *
 * --commandstats: after the table, Redis' INFO commandstats for each Redis row (reset before it, so
 * its 0.5 s warm-up is in): EVALSHA calls and µs per call, and the commands the scripts ran per EVALSHA.
 *
 * Needs redis-server and haproxy (Debian's; scripts/install-test-deps.sh installs them).
 */
import * as os from "node:os";
import { parseArgs } from "node:util";
import { startRedis } from "../test/helpers/redis";
import { startHaproxy } from "../test/helpers/haproxy";
import { freeLoopbackPort } from "../test/helpers/net";
import { BenchResult, formatTable, runHttpBench } from "./leases";
import { RedisCommandStats } from "./redis-commandstats";
import { forkSyntheticService, randomToken, SyntheticOptions } from "./synthetic-service";
import { processCpuMicros } from "./proc-cpu";

async function main(): Promise<void> {
    const { values } = parseArgs({
        options: {
            seconds: { type: "string", default: "5" },
            concurrency: { type: "string", default: "1,16,64" },
            members: { type: "string", default: "1000" },
            commandstats: { type: "boolean", default: false },
            rate: { type: "string" },
        },
    });
    const seconds = Math.min(10, Number(values.seconds));
    const concurrencies = values.concurrency!.split(",").map(Number);
    const members = Number(values.members);
    const rate = values.rate === undefined ? undefined : Number(values.rate);
    if (
        !(seconds > 0) ||
        !concurrencies.every((c) => Number.isInteger(c) && c > 0) ||
        !(Number.isInteger(members) && members > 0) ||
        (rate !== undefined && !(rate > 0))
    )
        throw new Error("--seconds, --concurrency (a list), --members and --rate must be positive numbers");
    const redis = await startRedis();
    // A replica of it, for the row whose grants wait for one (--store-grant-replicas 1).
    const replica = await startRedis({ password: redis.password, replicaOf: redis.port });
    const token = randomToken();
    const rows: BenchResult[] = [];
    const stats = values.commandstats ? new RedisCommandStats(redis.url) : undefined;
    try {
        const setups: [string, Partial<SyntheticOptions>][] = [
            ["memory store", {}],
            ["redis store, 1 process", { store: redis.url }],
            ["redis store, 1 process, grants confirmed by 1 replica", { store: redis.url, grantReplicas: 1 }],
            ["bare node:http, memory (peer)", { bare: true }],
        ];
        const redisPid = redis.pid()!;
        const measure = async (name: string, port: number, servicePids: number[]) => {
            const cpu: Record<string, () => number> = {
                service: () => servicePids.reduce((n, pid) => n + processCpuMicros(pid), 0),
                ...(name.startsWith("redis") && {
                    redis: () => processCpuMicros(redisPid) + processCpuMicros(replica.pid()!),
                }),
            };
            for (const concurrency of concurrencies) {
                const redisRow = stats && name.startsWith("redis");
                if (redisRow) await stats.reset();
                const r = await runHttpBench({
                    url: `http://127.0.0.1:${port}`,
                    token,
                    concurrency,
                    seconds,
                    cpu,
                    rate,
                });
                r.mode = `${name}, ${r.mode}${rate ? `, paced at ${rate}/s` : ""}`;
                rows.push(r);
                if (redisRow) await stats.take(r.mode);
                process.stderr.write(".");
            }
        };
        for (const [name, extra] of setups) {
            const child = await forkSyntheticService({ token, members, pools: 4, logLevel: "warn", ...extra });
            try {
                await measure(name, child.port, [child.pid]);
            } finally {
                await child.stop();
            }
            if (extra.store && !extra.grantReplicas) await threeBehindHaproxy(redis.url, token, members, measure);
        }
    } finally {
        await stats?.close();
        await replica.cleanup();
        await redis.cleanup();
    }
    const cpus = os.cpus();
    console.log(
        `\nnode ${process.version}, ${cpus.length} × ${cpus[0]?.model ?? "?"}; ${members} members in 4 pools; ${seconds}s per row\n`,
    );
    console.log(formatTable(rows));
    if (stats) console.log(`\n${stats.report()}`);
}

/** The same Redis store in three service processes (one key prefix) behind HAProxy's API port. */
async function threeBehindHaproxy(
    store: string,
    token: string,
    members: number,
    measure: (name: string, port: number, servicePids: number[]) => Promise<void>,
): Promise<void> {
    const storePrefix = `egress:bench-three-${process.pid}:`;
    const children = await Promise.all(
        [0, 1, 2].map(() => forkSyntheticService({ token, members, pools: 4, logLevel: "warn", store, storePrefix })),
    );
    const lb = await startHaproxy({
        apiPort: await freeLoopbackPort(),
        gatewayPort: await freeLoopbackPort(),
        replicas: await Promise.all(
            children.map(async (c) => ({ apiPort: c.port, gatewayPort: await freeLoopbackPort() })),
        ),
    });
    try {
        // Its /readyz checks mark a server up after two passes, a second apart.
        await lb.untilUp("egress_api_replicas", 3);
        await measure(
            "redis store, 3 processes behind HAProxy",
            lb.apiPort,
            children.map((c) => c.pid),
        );
    } finally {
        await lb.cleanup();
        await Promise.all(children.map((c) => c.stop()));
    }
}

main().catch((err) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exitCode = 1;
});
