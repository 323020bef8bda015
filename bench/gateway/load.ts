/**
 * The load of bench/gateway.ts: `concurrency` clients in this process, each looping one kind of
 * exchange for a warm-up second and then `seconds`, timing each one that succeeds.
 *   - "HTTP": keep-alive GETs (absolute-form through a proxy);
 *   - "CONNECT, new tunnel each": a CONNECT to the origin as a TCP target, one GET inside, close (timed whole);
 *   - "CONNECT, long-lived": one tunnel per client for the whole row, GETs inside it (each GET timed).
 */
import * as http from "node:http";
import { openTunnel, Wire } from "./wire";

export type Traffic = "HTTP" | "CONNECT, new tunnel each" | "CONNECT, long-lived";
export const TRAFFIC: readonly Traffic[] = ["HTTP", "CONNECT, new tunnel each", "CONNECT, long-lived"];

export interface Row {
    path: string;
    traffic: Traffic;
    concurrency: number;
    /** Exchanges that succeeded: requests, or tunnels for "CONNECT, new tunnel each". */
    count: number;
    rate: number;
    p50: number;
    p99: number;
    unavailable: number;
    failed: number;
    /** µs of CPU per exchange of the proxy process(es) of the row (gateway, squid, relay), and of the members. */
    cpuProxy?: number;
    cpuMembers?: number;
    /** Context switches per exchange of the proxy process's main thread (its event loop's sleeps and wake-ups). */
    switchesProxy?: number;
}

/** Where a row's CPU is read: each returns the µs its processes used so far. */
export interface CpuProbes {
    proxy?: () => number;
    members?: () => number;
    /** The proxy process's context switches so far (proc-cpu.ts processSwitches). */
    proxySwitches?: () => number;
}

/** Where the load goes: the origin's port, and the proxy's (with its Proxy-Authorization) unless straight. */
export interface Target {
    originPort: number;
    proxyPort?: number;
    auth?: string;
}

/** One client: `one()` runs an exchange and gives its status (0: no answer); `close()` ends what it holds. */
interface Client {
    one(): Promise<number>;
    close(): void;
}

/** The `q` quantile of ascending `sorted` (nearest rank below), NaN when empty. */
export function quantile(sorted: ArrayLike<number>, q: number): number {
    if (!sorted.length) return NaN;
    return sorted[Math.min(sorted.length - 1, Math.floor(q * (sorted.length - 1)))];
}

function httpClients(t: Target, concurrency: number): () => Client {
    const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
    const url = `http://127.0.0.1:${t.originPort}/page`;
    const one = () =>
        new Promise<number>((resolve) => {
            const headers: Record<string, string> = { host: `127.0.0.1:${t.originPort}` };
            if (t.auth) headers["proxy-authorization"] = t.auth;
            const req = http.request(
                t.proxyPort
                    ? { agent, host: "127.0.0.1", port: t.proxyPort, path: url, headers }
                    : { agent, host: "127.0.0.1", port: t.originPort, path: "/page", headers },
                (res) => {
                    res.resume().on("end", () => resolve(res.statusCode!));
                },
            );
            req.setTimeout(10_000, () => req.destroy());
            req.on("error", () => resolve(0)).end();
        });
    // One agent for all clients (its pool is theirs); destroyed once, by whichever closes first.
    return () => ({ one, close: () => agent.destroy() });
}

function tunnelClients(t: Target, longLived: boolean): () => Client {
    if (!t.proxyPort) throw new Error("a CONNECT row needs a proxy");
    const proxyPort = t.proxyPort;
    const host = `127.0.0.1:${t.originPort}`;
    return () => {
        let wire: Wire | undefined;
        return {
            async one() {
                if (!wire) {
                    const opened = await openTunnel(proxyPort, host, t.auth);
                    if (typeof opened === "number") return opened;
                    wire = opened;
                }
                const status = await wire.get(host, "/page");
                // A failed GET leaves the tunnel unusable; so does every GET of a one-request tunnel.
                if (!longLived || status !== 200) {
                    wire.close();
                    wire = undefined;
                }
                return status;
            },
            close: () => wire?.close(),
        };
    };
}

/** One row: `concurrency` clients of `traffic` against `target` for a warm-up second, then `seconds`. */
export async function measure(
    path: string,
    traffic: Traffic,
    target: Target,
    concurrency: number,
    seconds: number,
    cpu: CpuProbes = {},
): Promise<Row> {
    const make =
        traffic === "HTTP"
            ? httpClients(target, concurrency)
            : tunnelClients(target, traffic === "CONNECT, long-lived");
    const clients = Array.from({ length: concurrency }, make);
    const samples: number[] = [];
    let unavailable = 0;
    let failed = 0;
    const loop = async (client: Client, until: number, record: boolean) => {
        while (performance.now() < until) {
            const t0 = performance.now();
            const status = await client.one();
            if (!record) continue;
            if (status === 200) samples.push(performance.now() - t0);
            else if (status === 503) unavailable++;
            else failed++;
        }
    };
    const warm = performance.now() + 1000;
    await Promise.all(clients.map((c) => loop(c, warm, false)));
    const started = performance.now();
    const proxy0 = cpu.proxy?.();
    const members0 = cpu.members?.();
    const switches0 = cpu.proxySwitches?.();
    const end = started + seconds * 1000;
    await Promise.all(clients.map((c) => loop(c, end, true)));
    const elapsed = (performance.now() - started) / 1000;
    const per = (now: number | undefined, then: number | undefined) =>
        now === undefined || then === undefined ? undefined : (now - then) / Math.max(1, samples.length);
    const cpuProxy = per(cpu.proxy?.(), proxy0);
    const cpuMembers = per(cpu.members?.(), members0);
    const switchesProxy = per(cpu.proxySwitches?.(), switches0);
    for (const c of clients) c.close();
    const a = Float64Array.from(samples).sort();
    return {
        path,
        traffic,
        concurrency,
        count: a.length,
        rate: a.length / elapsed,
        p50: quantile(a, 0.5),
        p99: quantile(a, 0.99),
        unavailable,
        failed,
        cpuProxy,
        cpuMembers,
        switchesProxy,
    };
}

/** One row from the same row measured in several rounds: medians of rate, latency and CPU, counts summed. */
export function medianRow(rounds: readonly Row[]): Row {
    const med = (pick: (r: Row) => number | undefined) => {
        const xs = rounds
            .map(pick)
            .filter((x): x is number => x !== undefined && Number.isFinite(x))
            .sort((a, b) => a - b);
        return xs.length ? xs[Math.floor((xs.length - 1) / 2)] : undefined;
    };
    return {
        ...rounds[0],
        count: rounds.reduce((n, r) => n + r.count, 0),
        rate: med((r) => r.rate) ?? NaN,
        p50: med((r) => r.p50) ?? NaN,
        p99: med((r) => r.p99) ?? NaN,
        unavailable: rounds.reduce((n, r) => n + r.unavailable, 0),
        failed: rounds.reduce((n, r) => n + r.failed, 0),
        cpuProxy: med((r) => r.cpuProxy),
        cpuMembers: med((r) => r.cpuMembers),
        switchesProxy: med((r) => r.switchesProxy),
    };
}
