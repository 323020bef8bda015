/**
 * The rotating gateway's cost, printed as a table: the same GET load against a loopback origin
 *   1. straight to the origin (the ceiling: no proxy at all),
 *   2. through one member (a real `local` kind proxy process, proxy-chain),
 *   3. through the gateway (src/service/gateway: auth, a lease per request, chained through the member
 *      the lease picked, release with its outcome), over `--members` such member processes,
 *   4. the gateway with the Redis lease store, one process, and
 *   5. three such gateways on one Redis store behind HAProxy (bench/gateway-replicas.ts),
 * and then the share of requests that succeed when 1 of 5 members refuses, with retries 0 and 1
 * (bench/gateway-retries.ts),
 * side by side in one run, at each `--concurrency` (keep-alive clients). A gateway request holds its
 * member alone (a lease), so c clients need c members: at concurrency c the gateway has c members
 * (`--members` adds more, to see rotation over a larger pool). Members that rotate are each less
 * warm than the one member of the direct row, which is part of what the gateway costs.
 *
 *   node dist/bench/gateway.js [--concurrency 1,4] [--members <n ≥ each c>] [--seconds 5]
 *   BENCH_GATEWAY_PROF=<dir> node dist/bench/gateway.js   # also a CPU profile of the gateway process
 *
 * Processes: the origin and the gateway are forked children (this file in another role), the members
 * are the local kind's proxy processes, and the load comes from this process; so no two of them share
 * an event loop. The gateway's lease manager has no per-target rest (--target-cooldown 0): with the
 * default 30 s, one origin host would allow `members` requests per 30 s, which measures the policy, not
 * the gateway. Every member is healthy (a stub health source); nothing else differs from `egress serve`.
 * Loopback only. Needs redis-server and haproxy (Debian's; scripts/install-test-deps.sh installs them).
 */
import { ChildProcess, fork, spawn } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";
import pino from "pino";
import { startRedis, TestRedis } from "../test/helpers/redis";
import {
    BenchGateway,
    listenReadyz,
    ONE_REPLICA,
    openStore,
    replicaLine,
    replicaRows,
    StoreSpec,
    THREE_REPLICAS,
} from "./gateway-replicas";
import { benchTable } from "./table";
import { retryRows, retryTable } from "./gateway-retries";

const ROLE = process.argv[2];

// ---- child roles -------------------------------------------------------------------------------

/** The origin: 200 with a short body, like a small page. */
function runOrigin(): void {
    const body = Buffer.from("x".repeat(512));
    const server = http.createServer((_req, res) => {
        res.writeHead(200, { "content-type": "text/plain", "content-length": body.length });
        res.end(body);
    });
    server.listen(0, "127.0.0.1", () => process.send!({ port: (server.address() as { port: number }).port }));
}

/** The gateway over `urls` (one pool, "bench"), its token from IPC (never argv or env); `store`: leases in Redis. */
function runGateway(): void {
    process.once("message", async (m: { token: string; urls: string[]; store?: StoreSpec }) => {
        const { Fleet } = require("../src/service/fleet/fleet") as typeof import("../src/service/fleet/fleet");
        const { LeaseManager } = require("../src/service/leases") as typeof import("../src/service/leases");
        const { Gateway } = require("../src/service/gateway") as typeof import("../src/service/gateway");
        const { createMetrics } =
            require("../src/service/observe/metrics") as typeof import("../src/service/observe/metrics");
        const { sha256 } = require("../src/service/http/auth") as typeof import("../src/service/http/auth");
        const { createLogger } = require("../src/log/logger") as typeof import("../src/log/logger");
        const log = createLogger({ level: "info", destination: pino.destination({ dest: 2, sync: false }) });
        const store = m.store && (await openStore(m.store, log));
        const fleet = new Fleet(store || new LeaseManager({ targetCooldownSeconds: 0 }), {
            setMembers() {},
            get: () => ({ state: "healthy" }),
        });
        const members = m.urls.map((url, index) => {
            const u = new URL(url);
            return {
                id: `bench-${index}`,
                pool: "bench",
                provider: "local",
                kind: "local" as const,
                index,
                host: u.hostname,
                port: Number(u.port),
                url,
                zone: "local",
            };
        });
        fleet.sync(members, [{ name: "bench", cooldownSeconds: 0 } as never]);
        // The publication is one script run after the next microtask (bench/synthetic-service.ts waits the same).
        if (store) await new Promise((r) => setTimeout(r, 500));
        const ready = () => (store ? store.ready() : ({ ok: true } as const));
        const gateway = new Gateway({
            port: 0,
            fleet,
            tokens: [{ name: "bench", sha256: sha256(m.token).toString("hex"), scopes: ["lease"] }],
            metrics: createMetrics().gateway,
            log,
            ready,
        });
        const { port } = await gateway.listen();
        process.once("SIGINT", () => process.exit(0)); // a normal exit, so --cpu-prof writes its profile
        process.send!({ port, readyPort: store ? await listenReadyz(ready) : 0 });
    });
}

/**
 * The gateway's own decisions per request, in process and without I/O: token check (SHA-256, constant
 * time), username, concurrency slot, lease and release. What the gateway adds beyond one more proxy hop.
 */
function admissionMicros(seconds = 1): number {
    const { Fleet } = require("../src/service/fleet/fleet") as typeof import("../src/service/fleet/fleet");
    const { LeaseManager } = require("../src/service/leases") as typeof import("../src/service/leases");
    const { Admission } =
        require("../src/service/gateway/admission") as typeof import("../src/service/gateway/admission");
    const { immediate } = require("../src/service/store/types") as typeof import("../src/service/store/types");
    const { sha256 } = require("../src/service/http/auth") as typeof import("../src/service/http/auth");
    const fleet = new Fleet(new LeaseManager({ targetCooldownSeconds: 0 }), {
        setMembers() {},
        get: () => ({ state: "healthy" }),
    });
    fleet.sync(
        Array.from({ length: 8 }, (_, index) => ({
            id: `m-${index}`,
            pool: "bench",
            provider: "local",
            kind: "local" as const,
            index,
            host: "127.0.0.1",
            port: 1000 + index,
            url: `http://127.0.0.1:${1000 + index}`,
            zone: "local",
        })),
        [{ name: "bench", cooldownSeconds: 0 } as never],
    );
    const token = "bench-token-0123456789abcdef";
    const admission = new Admission(
        [{ name: "bench", sha256: sha256(token).toString("hex"), scopes: ["lease"] }],
        fleet,
        3600,
    );
    const one = () => {
        const r = immediate(admission.admit({ username: "bench_session_s1", password: token, hostname: "127.0.0.1" }));
        if (!r.ok) throw new Error(r.refusal.message);
        r.admitted.leave();
        immediate(fleet.release(r.admitted.lease.id, "ok"));
    };
    for (let i = 0; i < 20_000; i++) one();
    let n = 0;
    const t0 = performance.now();
    const end = t0 + seconds * 1000;
    while (performance.now() < end) for (let i = 0; i < 1000; i++, n++) one();
    return ((performance.now() - t0) * 1000) / n;
}

// ---- the driver ---------------------------------------------------------------------------------

interface Row {
    mode: string;
    concurrency: number;
    requests: number;
    rps: number;
    p50: number;
    p99: number;
    unavailable: number;
    failed: number;
}

/** `concurrency` keep-alive clients loop GET `url` (through `proxy` if given) for `seconds`. */
async function drive(
    mode: string,
    opts: { originPort: number; proxyPort?: number; auth?: string; concurrency: number; seconds: number },
): Promise<Row> {
    const agent = new http.Agent({ keepAlive: true, maxSockets: opts.concurrency });
    const url = `http://127.0.0.1:${opts.originPort}/page`;
    const one = () =>
        new Promise<number>((resolve) => {
            const headers: Record<string, string> = { host: `127.0.0.1:${opts.originPort}` };
            if (opts.auth) headers["proxy-authorization"] = opts.auth;
            const req = http.request(
                opts.proxyPort
                    ? { agent, host: "127.0.0.1", port: opts.proxyPort, path: url, headers }
                    : { agent, host: "127.0.0.1", port: opts.originPort, path: "/page", headers },
                (res) => {
                    res.resume().on("end", () => resolve(res.statusCode!));
                },
            );
            req.on("error", () => resolve(0)).end();
        });
    const samples: number[] = [];
    let unavailable = 0;
    let failed = 0;
    const loop = async (until: number, record: boolean) => {
        while (performance.now() < until) {
            const t0 = performance.now();
            const status = await one();
            if (!record) continue;
            if (status === 200) samples.push(performance.now() - t0);
            else if (status === 503) unavailable++;
            else failed++;
        }
    };
    const warm = performance.now() + 1000;
    await Promise.all(Array.from({ length: opts.concurrency }, () => loop(warm, false)));
    const started = performance.now();
    const end = started + opts.seconds * 1000;
    await Promise.all(Array.from({ length: opts.concurrency }, () => loop(end, true)));
    const seconds = (performance.now() - started) / 1000;
    agent.destroy();
    const a = Float64Array.from(samples).sort();
    const at = (q: number) => (a.length ? a[Math.min(a.length - 1, Math.floor(q * (a.length - 1)))] : NaN);
    return {
        mode,
        concurrency: opts.concurrency,
        requests: a.length,
        rps: a.length / seconds,
        p50: at(0.5),
        p99: at(0.99),
        unavailable,
        failed,
    };
}

function forkRole(role: string): Promise<{ child: ChildProcess; port: number; send(m: unknown): void }> {
    const child = fork(__filename, [role], {
        stdio: ["ignore", "inherit", "inherit", "ipc"],
        execArgv:
            role === "gateway" && process.env.BENCH_GATEWAY_PROF
                ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_GATEWAY_PROF}`]
                : [],
    });
    return new Promise((resolve, reject) => {
        child.once("error", reject);
        child.once("exit", (code) => reject(new Error(`${role} exited with ${code}`)));
        const ready = { child, port: 0, send: (m: unknown) => child.send(m as never) };
        child.once("message", (m: { port: number }) => resolve({ ...ready, port: m.port }));
        if (role === "origin") return;
        resolve(ready); // the gateway answers after its IPC message: the caller waits for it
    });
}

/** Forks a gateway over `urls` (with `store`: leases in Redis) and waits for its ports; `stop` ends it normally. */
async function startGateway(
    children: ChildProcess[],
    token: string,
    urls: string[],
    store?: StoreSpec,
): Promise<BenchGateway> {
    const gw = await forkRole("gateway");
    children.push(gw.child);
    const ports = await new Promise<{ port: number; readyPort: number }>((resolve, reject) => {
        gw.child.once("message", resolve);
        gw.child.once("exit", (code) => reject(new Error(`a gateway exited with ${code} before listening`)));
        gw.send({ token, urls, store });
    });
    const stop = () =>
        new Promise<void>((r) => {
            if (gw.child.exitCode !== null || gw.child.signalCode !== null) return r();
            gw.child.once("exit", () => r());
            gw.child.kill("SIGINT");
        });
    return { ...ports, stop };
}

/** One local-kind member process (components/local/proxy-server.js), as the provider starts it. */
async function startMember(dir: string, i: number): Promise<{ child: ChildProcess; url: string }> {
    const ready = path.join(dir, `m${i}.ready`);
    const script = path.join(__dirname, "..", "components", "local", "proxy-server.js");
    const child = spawn(process.execPath, [script, "--id", `bench-${i}`, "--port", "0", "--ready", ready], {
        stdio: ["ignore", "ignore", "inherit"],
    });
    for (let t = 0; t < 200 && !fs.existsSync(ready); t++) await new Promise((r) => setTimeout(r, 50));
    if (!fs.existsSync(ready)) throw new Error(`member ${i} did not start`);
    return { child, url: `http://127.0.0.1:${JSON.parse(fs.readFileSync(ready, "utf8")).port}` };
}

async function main(): Promise<void> {
    const { values } = parseArgs({
        options: {
            members: { type: "string" },
            concurrency: { type: "string", default: "1,4" },
            seconds: { type: "string", default: "5" },
        },
    });
    const levels = values.concurrency!.split(",").map(Number);
    const seconds = Number(values.seconds);
    const fixed = values.members === undefined ? undefined : Number(values.members);
    if ((fixed !== undefined && !(fixed >= 1)) || levels.some((c) => !(c >= 1)) || !(seconds > 0))
        throw new Error("--members, --concurrency and --seconds must be positive numbers");
    if (fixed !== undefined && Math.max(...levels) > fixed)
        console.error(
            `note: concurrency above --members (${fixed}) gets 503s by design (one request per member at a time)`,
        );
    const members = fixed ?? Math.max(...levels);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-bench-gw-"));
    const children: ChildProcess[] = [];
    let redis: TestRedis | undefined;
    try {
        redis = await startRedis(); // no persistence, its own port and dir
        const origin = await forkRole("origin");
        children.push(origin.child);
        const ms = await Promise.all(Array.from({ length: members }, (_, i) => startMember(dir, i)));
        children.push(...ms.map((m) => m.child));
        const token = `bench_${crypto.randomBytes(18).toString("base64url")}`;
        const auth = `Basic ${Buffer.from(`bench:${token}`).toString("base64")}`;
        const rows: Row[] = [];
        const spreads = new Map<number, number[]>();
        for (const c of levels) {
            // A gateway per level over the members it needs (all of them with --members).
            const urls = ms.slice(0, fixed ?? c).map((m) => m.url);
            const gw = await startGateway(children, token, urls);
            rows.push(await drive("origin directly (ceiling)", { originPort: origin.port, concurrency: c, seconds }));
            rows.push(
                await drive("through one member", {
                    originPort: origin.port,
                    proxyPort: Number(new URL(ms[0].url).port),
                    concurrency: c,
                    seconds,
                }),
            );
            rows.push(
                await drive(`through the gateway (${urls.length} member${urls.length > 1 ? "s" : ""})`, {
                    originPort: origin.port,
                    proxyPort: gw.port,
                    auth,
                    concurrency: c,
                    seconds,
                }),
            );
            await gw.stop();
            const r = await replicaRows({
                redisUrl: redis.url,
                prefix: `egress:bench-gw-${process.pid}-${c}-`,
                startGateway: (store) => startGateway(children, token, urls, store),
                drive: (mode, proxyPort) =>
                    drive(mode, { originPort: origin.port, proxyPort, auth, concurrency: c, seconds }),
            });
            rows.push(r.one, r.three);
            spreads.set(c, r.spread);
        }
        const f = (n: number, d = 2) => (Number.isFinite(n) ? n.toFixed(d) : "-");
        console.log(
            `\nGET of a 512-byte page from a loopback origin, ${seconds} s per row; load average ${os
                .loadavg()
                .map((l) => l.toFixed(2))
                .join(" ")}; ${os.cpus().length} CPUs\n`,
        );
        console.log(
            benchTable(
                ["path", "clients", "requests", "req/s", "p50 ms", "p99 ms", "503", "failed"],
                rows.map((r) => [
                    r.mode,
                    String(r.concurrency),
                    String(r.requests),
                    f(r.rps, 0),
                    f(r.p50, 3),
                    f(r.p99, 3),
                    String(r.unavailable),
                    String(r.failed),
                ]),
            ),
        );
        console.log("");
        console.log(
            `the gateway's own work per request (auth, username, lease, release; in process): ${f(admissionMicros(), 1)} µs\n`,
        );
        for (const c of levels) {
            const direct = rows.find((r) => r.concurrency === c && r.mode === "through one member")!;
            const viaGw = rows.find((r) => r.concurrency === c && r.mode.startsWith("through the gateway"))!;
            console.log(
                `${c} client(s): the gateway adds ${f(viaGw.p50 - direct.p50, 3)} ms at p50 (target < 1 ms) and reaches ${f((100 * viaGw.rps) / direct.rps, 0)}% of the direct throughput (target ≥ 50%)`,
            );
        }
        const at = (c: number, mode: string) => rows.find((r) => r.concurrency === c && r.mode === mode)!;
        for (const c of levels) console.log(replicaLine(c, at(c, ONE_REPLICA), at(c, THREE_REPLICAS), spreads.get(c)!));
        // Retries on another member: outcomes, not speed (bench/gateway-retries.ts).
        console.log(`\n${retryTable(await retryRows())}`);
    } finally {
        for (const c of children) c.kill("SIGTERM");
        await redis?.cleanup();
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

if (ROLE === "origin") runOrigin();
else if (ROLE === "gateway") runGateway();
else
    main().then(
        () => process.exit(0),
        (e) => {
            console.error(e);
            process.exit(1);
        },
    );
