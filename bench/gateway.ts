/**
 * The rotating gateway's cost, printed as tables (issue 21's "Measure and report"): the same load
 * against a loopback origin, side by side in one run at each `--concurrency`,
 *   1. straight to the origin (the ceiling: no proxy at all, plain HTTP only),
 *   2. through one member (a real `local` kind proxy process, proxy-chain): "direct",
 *   3. through the gateway (src/service/gateway: auth, a lease per request, chained through the member
 *      the lease picked, release with its outcome), over c such member processes,
 *   4. through squid as the rotating gateway an infra team would build instead: the same members as
 *      round-robin parents (bench/gateway/squid.ts),
 * each for plain HTTP (keep-alive GETs), for CONNECT tunnels opened per request (tunnels/s) and for
 * GETs inside long-lived tunnels (bench/gateway/load.ts; the origin is the CONNECT target, plain TCP);
 * then with the Redis lease store, one gateway process and three behind HAProxy
 * (bench/gateway-replicas.ts; HTTP only); then each proxied row beside its direct row and issue 21's
 * goals, met or not (bench/gateway/report.ts); then the share of requests that succeed when 1 of 5
 * members refuses, with retries 0 and 1 (bench/gateway-retries.ts).
 *
 * A gateway request holds its member alone (a lease), so c clients need c members: at concurrency c the
 * gateway and squid have the same c members (`--members` gives both more, to see rotation over a
 * larger pool). Members that rotate are each less warm than the one member of the direct row, which
 * is part of what the gateway (and squid) costs.
 *
 *   node dist/bench/gateway.js [--concurrency 1,4,16] [--members <n ≥ each c>] [--seconds 5] [--skip-replicas]
 *   BENCH_GATEWAY_PROF=<dir> node dist/bench/gateway.js   # also a CPU profile of the gateway process
 *
 * Processes: the origin and the gateway are forked children (this file in another role,
 * bench/gateway/roles.ts), the members are the local kind's proxy processes, squid is Debian's, and the
 * load comes from this process; so no two of them share an event loop. The gateway's lease manager has
 * no per-target rest (--target-cooldown 0): with the default 30 s, one origin host would allow `members`
 * requests per 30 s, which measures the policy, not the gateway. Every member is healthy (a stub health
 * source); nothing else differs from `egress serve`. Loopback only. Needs redis-server, haproxy and squid
 * (Debian's; scripts/install-test-deps.sh installs them).
 */
import { ChildProcess } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { startRedis, TestRedis } from "../test/helpers/redis";
import { ONE_REPLICA, replicaLine, replicaRows, THREE_REPLICAS } from "./gateway-replicas";
import { retryRows, retryTable } from "./gateway-retries";
import { admissionMicros } from "./gateway/admission";
import { type CpuProbes, measure, medianRow, Row, Target, TRAFFIC } from "./gateway/load";
import { forkRole, startGateway, startMember, startRelay } from "./gateway/procs";
import { GATEWAY, goals, goalsTable, MEMBER, ORIGIN, RELAY, rowsTable, SQUID_ROW } from "./gateway/report";
import { runGateway, runOrigin, runRelay } from "./gateway/roles";
import { processCpuMicros, processSwitches } from "./proc-cpu";
import { startSquid } from "./gateway/squid";

const USAGE = `node dist/bench/gateway.js [options]
  --concurrency <list>  client counts, comma-separated (default 1,4,16)
  --members <n>         members behind the gateway and squid at every count (default: as many as the clients)
  --seconds <s>         measured seconds per row, after a warm-up second (default 5)
  --rounds <n>          rounds of every row, interleaved; each row is the median of its rounds (default 3)
  --skip-replicas       leave out the Redis-store rows (one gateway, three behind HAProxy)
  --help                this text
BENCH_GATEWAY_PROF=<dir> also writes a CPU profile of the gateway process there.`;

function options(): { levels: number[]; seconds: number; rounds: number; fixed?: number; replicas: boolean } {
    const { values } = parseArgs({
        options: {
            members: { type: "string" },
            concurrency: { type: "string", default: "1,4,16" },
            seconds: { type: "string", default: "5" },
            rounds: { type: "string", default: "3" },
            "skip-replicas": { type: "boolean", default: false },
            help: { type: "boolean", default: false },
        },
    });
    if (values.help) {
        console.log(USAGE);
        process.exit(0);
    }
    const levels = values.concurrency!.split(",").map(Number);
    const seconds = Number(values.seconds);
    const rounds = Number(values.rounds);
    const fixed = values.members === undefined ? undefined : Number(values.members);
    if (
        (fixed !== undefined && !(fixed >= 1)) ||
        levels.some((c) => !(c >= 1)) ||
        !(seconds > 0) ||
        !Number.isInteger(rounds) ||
        rounds < 1
    )
        throw new Error(`--members, --concurrency, --seconds and --rounds must be positive numbers\n${USAGE}`);
    if (fixed !== undefined && Math.max(...levels) > fixed)
        console.error(
            `note: concurrency above --members (${fixed}) gets 503s by design (one request per member at a time)`,
        );
    return { levels, seconds, rounds, fixed, replicas: !values["skip-replicas"] };
}

async function main(): Promise<void> {
    const { levels, seconds, rounds, fixed, replicas } = options();
    const members = fixed ?? Math.max(...levels);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-bench-gw-"));
    const children: ChildProcess[] = [];
    let redis: TestRedis | undefined;
    try {
        if (replicas) redis = await startRedis(); // no persistence, its own port and dir
        const origin = await forkRole("origin");
        children.push(origin.child);
        const ms = await Promise.all(Array.from({ length: members }, (_, i) => startMember(dir, i)));
        children.push(...ms.map((m) => m.child));
        const token = `bench_${crypto.randomBytes(18).toString("base64url")}`;
        const auth = `Basic ${Buffer.from(`bench:${token}`).toString("base64")}`;
        const originPort = origin.port;
        const rows: Row[] = [];
        const spreads = new Map<number, number[]>();
        for (const c of levels) {
            // A gateway, a squid and a bare relay per level, over the members it needs (all of them with --members).
            const urls = ms.slice(0, fixed ?? c).map((m) => m.url);
            const memberPids = ms.slice(0, fixed ?? c).map((m) => m.child.pid!);
            const gw = await startGateway(children, token, urls);
            const squid = await startSquid(urls, `http://127.0.0.1:${originPort}/probe`);
            const relay = await startRelay(children, urls);
            const cpuOf = (pids: number[]) => () => pids.reduce((n, pid) => n + processCpuMicros(pid), 0);
            const members = cpuOf(memberPids);
            const probes = (pid: number): CpuProbes => ({
                proxy: cpuOf([pid]),
                members,
                proxySwitches: () => processSwitches(pid),
            });
            try {
                const paths: [string, Target, CpuProbes][] = [
                    [
                        MEMBER,
                        { originPort, proxyPort: Number(new URL(ms[0].url).port) },
                        { members: cpuOf([memberPids[0]]) },
                    ],
                    [RELAY, { originPort, proxyPort: relay.port }, probes(relay.pid)],
                    [GATEWAY, { originPort, proxyPort: gw.port, auth }, probes(gw.pid)],
                    [SQUID_ROW, { originPort, proxyPort: squid.port }, probes(squid.pid)],
                ];
                // Rounds interleave the rows (each round: every traffic through every path), so a load that
                // comes and goes hits them alike; each row is the median of its rounds.
                const byRow = new Map<string, Row[]>();
                const keep = (r: Row) =>
                    byRow.set(`${r.path}|${r.traffic}`, [...(byRow.get(`${r.path}|${r.traffic}`) ?? []), r]);
                for (let round = 0; round < rounds; round++) {
                    keep(await measure(ORIGIN, "HTTP", { originPort }, c, seconds));
                    for (const traffic of TRAFFIC)
                        for (const [p, target, cpu] of paths) keep(await measure(p, traffic, target, c, seconds, cpu));
                }
                rows.push(...[...byRow.values()].map(medianRow));
            } finally {
                relay.stop();
                await squid.stop();
                await gw.stop();
            }
            if (!redis) continue;
            const r = await replicaRows({
                redisUrl: redis.url,
                prefix: `egress:bench-gw-${process.pid}-${c}-`,
                startGateway: (store) => startGateway(children, token, urls, store),
                drive: (mode, proxyPort) => measure(mode, "HTTP", { originPort, proxyPort, auth }, c, seconds),
            });
            rows.push(r.one, r.three);
            spreads.set(c, r.spread);
        }
        const load = os
            .loadavg()
            .map((l) => l.toFixed(2))
            .join(" ");
        const counts = levels.map((c) => fixed ?? c).join("/");
        console.log(
            `\nGET of a 512-byte page from a loopback origin, ${seconds} s per row after a 1 s warm-up, median of ${rounds} interleaved round(s); gateway and squid over ${counts} member(s); load average ${load}; ${os.cpus().length} CPUs\n`,
        );
        console.log(rowsTable(rows));
        console.log(
            `\ncount/per s: requests, or tunnels for "CONNECT, new tunnel each" (one GET each, timed whole); % direct and +p50 ms: against "${MEMBER}" with the same traffic and clients\n`,
        );
        console.log(
            `the gateway's own work per request (auth, username, lease, release; in process): ${admissionMicros().toFixed(1)} µs\n`,
        );
        console.log(goalsTable(goals(rows, TRAFFIC)));
        const at = (c: number, mode: string) => rows.find((r) => r.concurrency === c && r.path === mode)!;
        if (redis) console.log("");
        for (const c of spreads.keys())
            console.log(replicaLine(c, at(c, ONE_REPLICA), at(c, THREE_REPLICAS), spreads.get(c)!));
        // Retries on another member: outcomes, not speed (bench/gateway-retries.ts).
        console.log(`\n${retryTable(await retryRows())}`);
    } finally {
        for (const c of children) c.kill("SIGTERM");
        await redis?.cleanup();
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

const ROLE = process.argv[2];
if (ROLE === "origin") runOrigin();
else if (ROLE === "gateway") runGateway();
else if (ROLE === "relay") runRelay();
else
    main().then(
        () => process.exit(0),
        (e) => {
            console.error(e);
            process.exit(1);
        },
    );
