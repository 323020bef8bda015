/**
 * Lease throughput and latency, printed as a table.
 *
 *   node dist/bench/leases.js [--members 1000] [--seconds 3]
 *       in-process LeaseManager: acquire+release pairs, without and with a target
 *   node dist/bench/leases.js --url http://127.0.0.1:PORT --token T [--concurrency 16] [--seconds 5]
 *       adds a row driving POST /v1/leases + POST /v1/leases/:id/release over keep-alive connections
 *
 * Loopback only: the HTTP client refuses any other host, so a bench can never load a real deployment.
 */
import * as http from "node:http";
import { parseArgs } from "node:util";
import { LeaseManager } from "../src/service/leases";
import { RawHttpConnection } from "./http-client";
import { benchTable } from "./table";

export interface BenchResult {
    mode: string;
    pairs: number;
    seconds: number;
    pairsPerSecond: number;
    p50Ms: number;
    p99Ms: number;
    maxMs: number;
    /** HTTP mode: acquisitions answered 503 (counted, not timed). */
    unavailable?: number;
    /** HTTP mode: concurrent keep-alive clients. */
    concurrency?: number;
    /** HTTP mode: µs of CPU per pair of each process runHttpBench was given a `cpu` counter for, by name. */
    cpuPerPair?: Record<string, number>;
}

/** Latency percentiles over per-pair samples in ms. */
function summarize(mode: string, samples: number[], seconds: number, extra: Partial<BenchResult> = {}): BenchResult {
    const a = Float64Array.from(samples).sort();
    const at = (q: number) => (a.length ? a[Math.min(a.length - 1, Math.floor(q * (a.length - 1)))] : NaN);
    return {
        mode,
        pairs: a.length,
        seconds,
        pairsPerSecond: a.length / seconds,
        p50Ms: at(0.5),
        p99Ms: at(0.99),
        maxMs: a.length ? a[a.length - 1] : NaN,
        ...extra,
    };
}

/**
 * Acquire+release pairs against an in-process manager with `members` eligible members in one pool
 * (no pool cooldown). With `targets`, each pair names one of that many hosts, picked by a seeded RNG,
 * so per-target cooldowns (30 s default) are live and the LRU walk has to skip members.
 */
export function runInProcessBench(opts: { members?: number; seconds?: number; targets?: number } = {}): BenchResult {
    const members = opts.members ?? 1000;
    const seconds = opts.seconds ?? 3;
    let n = 0;
    const m = new LeaseManager({ initiallyEligible: true, newLeaseId: () => `L${++n}` });
    m.setMembers(
        Array.from({ length: members }, (_, i) => ({ id: `bench-${i}`, pool: "bench" })),
        { bench: { cooldownSeconds: 0 } },
    );
    let seed = 7;
    const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296;
    const hosts = Array.from({ length: opts.targets ?? 0 }, (_, i) => `site-${i}.example`);
    const pair = () => {
        const r = m.acquire(
            hosts.length ? { pool: "bench", target: hosts[Math.floor(rand() * hosts.length)] } : { pool: "bench" },
        );
        if (!r.ok) return false;
        m.release(r.lease.id, "ok");
        return true;
    };
    // Warm-up lets the JIT settle so the first milliseconds do not dominate p99.
    for (const end = performance.now() + 300; performance.now() < end;) pair();
    const samples: number[] = [];
    let refused = 0;
    const end = performance.now() + seconds * 1000;
    const started = performance.now();
    while (performance.now() < end) {
        const t0 = performance.now();
        if (pair()) samples.push(performance.now() - t0);
        else refused++;
    }
    const mode = `in-process, ${members} members${hosts.length ? `, ${hosts.length} targets` : ""}`;
    return summarize(mode, samples, (performance.now() - started) / 1000, refused ? { unavailable: refused } : {});
}

/** POST an already-serialized JSON body; resolve status and parsed body. */
function post(
    agent: http.Agent,
    base: URL,
    path: string,
    token: string,
    payload: string,
): Promise<{ status: number; body: any }> {
    return new Promise((resolve, reject) => {
        const req = http.request(
            {
                agent,
                host: base.hostname,
                port: base.port,
                path,
                method: "POST",
                headers: {
                    authorization: `Bearer ${token}`,
                    "content-type": "application/json",
                    "content-length": Buffer.byteLength(payload),
                },
            },
            (res) => {
                let text = "";
                res.setEncoding("utf8");
                res.on("data", (c) => (text += c));
                res.on("end", () => {
                    let parsed: unknown;
                    try {
                        parsed = text ? JSON.parse(text) : undefined;
                    } catch {
                        parsed = text;
                    }
                    resolve({ status: res.statusCode ?? 0, body: parsed });
                });
            },
        );
        req.on("error", reject);
        req.end(payload);
    });
}

/** One request-at-a-time connection: POST a JSON body (already serialized), get status and parsed body. */
type Poster = { post(path: string, payload: string): Promise<{ status: number; body: any }>; close(): void };

/** node:http with a keep-alive agent: what most Node crawlers use. */
function nodeHttpPoster(agent: http.Agent, base: URL, token: string): Poster {
    return {
        post: (path, payload) => post(agent, base, path, token, payload),
        close() {},
    };
}

/** bench/http-client.ts: a bare keep-alive HTTP/1.1 socket, so the client is not the bottleneck. */
async function rawPoster(base: URL, token: string): Promise<Poster> {
    const c = await RawHttpConnection.open(base.hostname.replace(/^\[|\]$/g, ""), Number(base.port || 80));
    const headers = `Authorization: Bearer ${token}\r\nContent-Type: application/json\r\n`;
    const cache = new Map<string, Buffer>(); // the lease request never changes: build its bytes once
    return {
        async post(path, payload) {
            const key = path + payload;
            let bytes = path.endsWith("/release") ? undefined : cache.get(key);
            if (!bytes) {
                bytes = c.request("POST", path, headers, payload);
                if (!path.endsWith("/release")) cache.set(key, bytes);
            }
            const r = await c.send(bytes);
            let body: unknown;
            try {
                body = r.body ? JSON.parse(r.body) : undefined;
            } catch {
                body = r.body;
            }
            return { status: r.status, body };
        },
        close: () => c.close(),
    };
}

export type HttpClientKind = "raw" | "node-http";

/**
 * Drives the lease API with `concurrency` keep-alive clients for `seconds` (at most 10): each loops
 * POST /v1/leases {} then POST /v1/leases/:id/release {outcome:"ok"}; a pair is timed from the first
 * byte sent to the release answer. 503s are counted as `unavailable`; any other unexpected status aborts
 * with the response, because a bench that silently measures errors measures nothing.
 * `client`: "raw" (default, bench/http-client.ts) or "node-http" (http.request + keep-alive Agent).
 */
export async function runHttpBench(opts: {
    url: string;
    token: string;
    concurrency?: number;
    seconds?: number;
    body?: object;
    client?: HttpClientKind;
    warmupSeconds?: number;
    /** µs of CPU used so far by a process, by name (proc-cpu.ts), read as the timed part starts and ends. */
    cpu?: Record<string, () => number>;
    /**
     * Pairs per second over all clients, each client starting its pairs on its own schedule (an open
     * loop) instead of as fast as it can: CPU per pair then compares builds at the same load.
     */
    rate?: number;
}): Promise<BenchResult> {
    const base = new URL(opts.url);
    if (base.protocol !== "http:" || !["127.0.0.1", "localhost", "[::1]"].includes(base.hostname))
        throw new Error(`runHttpBench: --url must be http:// on loopback (127.0.0.1), got ${opts.url}`);
    const concurrency = opts.concurrency ?? 16;
    const seconds = Math.min(10, opts.seconds ?? 5);
    const client = opts.client ?? "raw";
    const prefix = base.pathname.replace(/\/$/, "");
    const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
    const leaseBody = JSON.stringify(opts.body ?? {});
    const releaseBody = JSON.stringify({ outcome: "ok" });
    const posters = await Promise.all(
        Array.from({ length: concurrency }, () =>
            client === "raw" ? rawPoster(base, opts.token) : nodeHttpPoster(agent, base, opts.token),
        ),
    );
    const samples: number[] = [];
    let unavailable = 0;
    let end = 0;
    let measuring = false;
    if (opts.rate !== undefined && !(opts.rate > 0))
        throw new Error(`runHttpBench: rate must be > 0, got ${opts.rate}`);
    // With a rate, client k starts a pair every `every` ms, k/rate s after the others (behind: at once).
    const every = opts.rate ? (concurrency * 1000) / opts.rate : 0;
    const worker = async (p: Poster, k: number) => {
        let next = performance.now() + (k * every) / concurrency;
        while (performance.now() < end) {
            if (every > 0) {
                const wait = next - performance.now();
                if (wait > 0) await new Promise((r) => setTimeout(r, wait));
                next += every;
                if (performance.now() >= end) break;
            }
            const t0 = performance.now();
            const a = await p.post(`${prefix}/v1/leases`, leaseBody);
            if (a.status === 503) {
                if (measuring) unavailable++;
                await new Promise((r) => setTimeout(r, 1)); // yield, but do not honour a multi-second Retry-After in a bench
                continue;
            }
            const id = a.body?.lease?.id ?? a.body?.id;
            if ((a.status !== 200 && a.status !== 201) || typeof id !== "string")
                throw new Error(`POST /v1/leases answered ${a.status}: ${JSON.stringify(a.body)}`);
            const r = await p.post(`${prefix}/v1/leases/${encodeURIComponent(id)}/release`, releaseBody);
            if (r.status !== 200) throw new Error(`release of ${id} answered ${r.status}: ${JSON.stringify(r.body)}`);
            if (measuring) samples.push(performance.now() - t0);
        }
    };
    try {
        // Warm-up on the same connections, so the JIT (both sides) and TCP settle before samples count.
        end = performance.now() + (opts.warmupSeconds ?? 0.5) * 1000;
        await Promise.all(posters.map((p, k) => worker(p, k)));
        measuring = true;
        const cpu = Object.entries(opts.cpu ?? {});
        const cpuBefore = cpu.map(([, read]) => read());
        const started = performance.now();
        end = started + seconds * 1000;
        await Promise.all(posters.map((p, k) => worker(p, k)));
        // Pairs in flight when the time ran out finish (and are counted) before this read, not after it.
        const cpuPerPair = Object.fromEntries(
            cpu.map(([name, read], i) => [name, (read() - cpuBefore[i]) / Math.max(1, samples.length)]),
        );
        return summarize(`http, ${client} client`, samples, (performance.now() - started) / 1000, {
            unavailable,
            concurrency,
            ...(cpu.length > 0 && { cpuPerPair }),
        });
    } finally {
        for (const p of posters) p.close();
        agent.destroy();
    }
}

export function formatTable(rows: BenchResult[]): string {
    // The clients column only when some row has one, so in-process tables keep their shape.
    const clients = rows.some((r) => r.concurrency !== undefined);
    // A CPU column per process some row measured (runHttpBench's `cpu`); "-" where a row did not.
    const cpu = [...new Set(rows.flatMap((r) => Object.keys(r.cpuPerPair ?? {})))];
    const head = [
        "mode",
        ...(clients ? ["clients"] : []),
        "pairs/s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "pairs",
        "503s",
        ...cpu.map((n) => `${n} CPU µs/pair`),
    ];
    const body = rows.map((r) => [
        r.mode,
        ...(clients ? [r.concurrency === undefined ? "-" : String(r.concurrency)] : []),
        Math.round(r.pairsPerSecond).toLocaleString("en-US"),
        r.p50Ms.toFixed(4),
        r.p99Ms.toFixed(4),
        r.maxMs.toFixed(3),
        String(r.pairs),
        String(r.unavailable ?? 0),
        ...cpu.map((n) => (r.cpuPerPair?.[n] === undefined ? "-" : r.cpuPerPair[n].toFixed(1))),
    ]);
    return benchTable(head, body);
}

async function main(): Promise<void> {
    const { values } = parseArgs({
        options: {
            url: { type: "string" },
            token: { type: "string" },
            concurrency: { type: "string" },
            seconds: { type: "string" },
            members: { type: "string" },
        },
    });
    const num = (v: string | undefined, name: string, dflt: number) => {
        if (v === undefined) return dflt;
        const n = Number(v);
        if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got ${v}`);
        return n;
    };
    const seconds = num(values.seconds, "seconds", 3);
    const members = num(values.members, "members", 1000);
    const rows = [runInProcessBench({ members, seconds }), runInProcessBench({ members, seconds, targets: 1000 })];
    if (values.url) {
        if (!values.token) throw new Error("--url needs --token");
        rows.push(
            await runHttpBench({
                url: values.url,
                token: values.token,
                concurrency: num(values.concurrency, "concurrency", 16),
                seconds: Math.min(10, seconds),
            }),
        );
    }
    console.log(`node ${process.version}, ${require("node:os").cpus().length} CPUs\n`);
    console.log(formatTable(rows));
}

if (require.main === module) {
    main().catch((err) => {
        console.error(err instanceof Error ? err.message : err);
        process.exitCode = 1;
    });
}
