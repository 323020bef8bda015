/**
 * The real HTTP service (createApp: auth, validation, routing, metrics, logging, LeaseManager, Fleet)
 * over synthetic members, for bench/service.ts. No engine and no proxies: members are plain records
 * marked healthy by a stub health source, so a bench measures the request path and nothing else.
 *
 * Run as a child of bench/service.ts (fork): it waits for `{token, members, pools, logLevel}` on the IPC
 * channel, listens on 127.0.0.1:0 and answers `{port}`. The token arrives over IPC, not argv or env, so it
 * never shows in `ps`.
 */
import { fork } from "node:child_process";
import * as crypto from "node:crypto";
import * as http from "node:http";
import * as os from "node:os";
import pino from "pino";
import type { PoolConfig, ProxyMember } from "../src/model";
import { Timeline } from "../src/service/fleet/timeline";
import { clusterView } from "../src/service/cluster/view";
import { createApp } from "../src/service/api/app";
import { authenticate, sha256 } from "../src/service/http/auth";
import { Fleet, HealthSource } from "../src/service/fleet/fleet";
import { LeaseManager } from "../src/service/leases";
import { immediate } from "../src/service/store/types";
import { RedisLeaseStore } from "../src/service/store";
import { createLogger } from "../src/log/logger";
import { createMetrics } from "../src/service/observe/metrics";
import { OperationLog } from "../src/state/operations/journal";
import { Scaler } from "../src/service/control/scaler";

export interface SyntheticOptions {
    token: string;
    /** @default 1000 */
    members?: number;
    /** Members are spread round-robin over this many pools. @default 4 */
    pools?: number;
    /** Root logger level; production default is `info` (EGRESS_LOG_LEVEL). @default "warn" */
    logLevel?: string;
    /** Write the log to this file (synchronously, as pino writes stdout) instead of stdout; bench/log-volume.ts measures it. */
    logFile?: string;
    /**
     * Instead of createApp, a bare node:http handler calling the same Fleet: no auth, validation,
     * metrics or logging. Not the service: a ceiling, to show what HTTP alone costs on this machine.
     */
    bare?: boolean;
    /** A redis:// URL: leases live in Redis (RedisLeaseStore) instead of the in-memory LeaseManager. */
    store?: string;
    /** The store's key prefix; replicas of one bench row share one. @default a fresh one per process */
    storePrefix?: string;
    /** Redis replicas that must confirm each grant (src/service/store/grant-replicas.ts). @default 0 */
    grantReplicas?: number;
}

/** The bare ceiling: the lease routes with nothing but JSON in and out (see SyntheticOptions.bare). */
function bareHandler(fleet: Fleet): http.RequestListener {
    return (req, res) => {
        let text = "";
        req.setEncoding("utf8");
        req.on("data", (c: string) => (text += c));
        req.on("end", () => {
            const body = text ? JSON.parse(text) : {};
            const m = /^\/v1\/leases\/([^/]+)\/release$/.exec(req.url ?? "");
            let status = 404;
            let out: unknown = {};
            if (req.url === "/v1/leases") {
                const r = immediate(fleet.acquire(body));
                [status, out] = r.ok ? [201, { lease: r.lease }] : [503, { error: r.message }];
            } else if (m) {
                const r = immediate(fleet.release(m[1], body.outcome));
                [status, out] = r.ok ? [200, { released: true, lease: r.lease }] : [404, r];
            }
            const json = JSON.stringify(out);
            res.writeHead(status, {
                "content-type": "application/json; charset=utf-8",
                "content-length": Buffer.byteLength(json),
            }).end(json);
        });
    };
}

/** Every member is healthy from the start; lease errors are ignored (there is no prober to tell). */
const allHealthy: HealthSource = { setMembers() {}, get: () => ({ state: "healthy" }) };

export async function startSyntheticService(
    opts: SyntheticOptions,
): Promise<{ server: http.Server; port: number; fleet: Fleet }> {
    const nPools = opts.pools ?? 4;
    const nMembers = opts.members ?? 1000;
    // Pool cooldown 0: with any cooldown, 64 clients at 20k pairs/s would drain 1,000 members within
    // a second and the bench would measure 503s instead of the request path.
    const pools = Array.from({ length: nPools }, (_, i) => ({ name: `bench-${i}`, cooldownSeconds: 0 }) as PoolConfig);
    const members: ProxyMember[] = Array.from({ length: nMembers }, (_, i) => {
        const pool = pools[i % nPools].name;
        const port = 20_000 + i;
        return {
            id: `${pool}-${i}`,
            pool,
            provider: "synthetic",
            kind: "local",
            index: i,
            host: "127.0.0.1",
            port,
            url: `http://127.0.0.1:${port}`,
            zone: "bench",
        };
    });
    const log = createLogger({
        level: opts.logLevel ?? "warn",
        destination: opts.logFile ? pino.destination({ dest: opts.logFile, sync: true }) : undefined,
    });
    // A fresh prefix per run, so rows never see each other's leases.
    const redis = opts.store
        ? new RedisLeaseStore({
              url: opts.store,
              prefix: opts.storePrefix ?? `egress:bench-${crypto.randomBytes(4).toString("hex")}:`,
              log,
              grantReplicas: opts.grantReplicas,
          })
        : undefined;
    if (redis && !(await redis.connect(5000))) throw new Error("the bench's Redis is unreachable");
    const fleet = new Fleet(redis ?? new LeaseManager(), allHealthy);
    fleet.sync(members, pools);
    // The publication of the members is one script run after the next microtask; give it time to land.
    if (redis) await new Promise((r) => setTimeout(r, 500));
    const projectRoot = os.tmpdir();
    const ops = new OperationLog();
    // Scale routes are not benchmarked; the scaler only has to exist (it never touches the driver unless asked to scale).
    const scaler = new Scaler({ driver: undefined as never, projectRoot, stack: "bench", ops, log });
    const app = createApp({
        projectRoot,
        stack: "bench",
        version: "bench",
        log,
        scaler,
        ops,
        fleet,
        metrics: createMetrics(),
        cluster: () =>
            clusterView(undefined, { id: "bench", url: "", version: "bench", startedAt: new Date().toISOString() }),
        auth: authenticate([
            { name: "bench", sha256: sha256(opts.token).toString("hex"), scopes: ["lease", "discover"] },
        ]),
        providerHealth: () => [],
        reconcile: () => ({ enabled: false, intervalSeconds: 0, providersDown: [], backoff: [] }),
        ready: () => ({ ok: true }),
        timeline: new Timeline({ counts: () => fleet.poolCounts() }),
        storeReady: redis && (() => redis.ready()),
    });
    const server = http.createServer(opts.bare ? bareHandler(fleet) : app);
    await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, "127.0.0.1", () => resolve());
    });
    return { server, port: (server.address() as { port: number }).port, fleet };
}

/**
 * Forks this file as a service process and waits for its port. `script` may name another checkout's
 * build of this file (bench/log-volume.ts measures an older commit that way).
 */
export async function forkSyntheticService(
    opts: SyntheticOptions,
    execArgv: string[] = [],
    script = __filename,
): Promise<{ port: number; pid: number; stop(): Promise<void> }> {
    const child = fork(script, [], { execArgv, stdio: ["ignore", "inherit", "inherit", "ipc"] });
    const port = await new Promise<number>((resolve, reject) => {
        child.once("message", (m: { port: number }) => resolve(m.port));
        child.once("exit", (code) => reject(new Error(`synthetic service exited (${code}) before listening`)));
        child.send(opts);
    });
    return {
        port,
        pid: child.pid!,
        // Disconnect (not kill) so the child exits normally and --cpu-prof gets to write its profile.
        stop: () =>
            new Promise<void>((resolve) => {
                child.once("exit", () => resolve());
                child.disconnect();
            }),
    };
}

if (require.main === module) {
    if (!process.send) throw new Error("bench/synthetic-service.js is started by bench/service.js over IPC");
    process.once("message", (msg: SyntheticOptions) => {
        startSyntheticService(msg).then(
            ({ port }) => process.send!({ port }),
            (err) => {
                console.error(err);
                process.exit(1);
            },
        );
    });
    // The parent going away (even by SIGKILL) closes the channel: follow it rather than linger.
    process.on("disconnect", () => process.exit(0));
}

export const randomToken = () => `bench_${crypto.randomBytes(24).toString("base64url")}`;
