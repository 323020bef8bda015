import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import type { Logger } from "pino";
import { loadStackConfig, parseEgressConfig, type ProviderConfig } from "../config";
import {
    acquireWriterLock,
    describeHolder,
    engineHome,
    fileBackendDir,
    packageVersion,
    PROJECT,
    StackDriver,
} from "../engine";
import { checkerFor } from "../providers-health";
import { HealthMonitor } from "../health";
import { createApp } from "./app";
import type { AppDeps } from "./deps";
import { authenticate, ensureDevToken, loadTokens, StoredToken, tokensFromEnv } from "./auth";
import { Fleet } from "./fleet";
import { LeaseManager } from "./leases";
import { createLogger } from "../log/logger";
import { createMetrics } from "./metrics";
import { OperationLog } from "./operations";
import { ProviderHealth } from "./provider-health";
import { answerProtocolErrors } from "./protocol-errors";
import { Scaler } from "./scaler";
import { announceService, assertNoOtherService } from "./announce";
import { watchStackCheckpoint } from "./stack-watch";
import { Reconciler } from "./heal/reconciler";
import { Drainer } from "./drain/drainer";
import { Timeline } from "./timeline";
import { goneCheckFor, GoneCheck } from "../providers-health/gone";
import { kindOf } from "../../components/registry";
import type { ProxyMember } from "../model";
import { Gateway, type BlockRules } from "./gateway";
import { RedisLeaseStore, type LeaseStore, type StoreSpec } from "./store";

export interface ServeOptions {
    projectRoot: string;
    stack: string;
    /** @default 127.0.0.1 — loopback unless the operator opens it deliberately. */
    host?: string;
    /** @default 8080; 0 picks a free port. */
    port?: number;
    /** Tokens file; @default .egress/tokens-<stack>.json. `EGRESS_TOKENS` adds more. */
    tokensFile?: string;
    /** Run `up` once at start so the stack matches its config. @default true */
    converge?: boolean;
    probeIntervalMs?: number;
    /**
     * URL probed through every proxy; must be reachable *from the proxies* (and admitted by their ACL).
     * @default this service's loopback /v1/echo — right for local proxies only.
     */
    checkUrl?: string;
    /** Provider-health checks: ms between rounds (0 = off; default 60 s) and per-check timeout (default 30 s). */
    providerCheckIntervalMs?: number;
    providerCheckTimeoutMs?: number;
    /**
     * How often stack outputs are re-read when no operation runs: the fallback for changes made by
     * `egress up` elsewhere (a file backend's checkpoint is also watched, which sees them at once). @default 30000
     */
    outputsPollMs?: number;
    /** How long an operation waits for the stack's writer lock while another writer holds it. @default 1800000 */
    writerLockWaitMs?: number;
    log?: Logger;
    /** Extra CLI environment (tests: backend, passphrase). */
    engineEnv?: Record<string, string>;
    /** Local runtime state dir. @default engineHome().runDir */
    runDir?: string;
    /** Reconcile loop (self-healing, src/service/heal): time between rounds; 0 = off. @default 60000 */
    reconcileIntervalMs?: number;
    /** The dashboard timeline's sample interval (it keeps the last hour). @default 30000 */
    timelineIntervalMs?: number;
    /** Backoff after a failed repair. @default 1 min doubling to 30 min (tests shorten it) */
    healBackoff?: { baseMs: number; maxMs: number };
    /** Time between `: ping` comments on operation event streams. @default 15000 */
    sseHeartbeatMs?: number;
    /**
     * The rotating gateway (src/service/gateway): a forward proxy whose every request leases a member.
     * Off when undefined; `port` 0 picks a free port; `host` defaults to 127.0.0.1.
     */
    gateway?: { port: number; host?: string; blockRules?: BlockRules };
    /** Rest per (proxy, target) after a lease against that target ends (leases and gateway alike). @default 30 */
    targetCooldownSeconds?: number;
    /**
     * Where the serving state of leases lives (src/service/store): this process's memory, or Redis so a
     * restart or another replica loses nothing. @default { kind: "memory" }
     */
    store?: StoreSpec;
}

export interface RunningService {
    url: string;
    port: number;
    /** The gateway's proxy URL and port, when it runs. */
    gatewayUrl?: string;
    gatewayPort?: number;
    driver: StackDriver;
    scaler: Scaler;
    fleet: Fleet;
    reconciler: Reconciler;
    /** Where the plain copy of the dev token is, when this start generated one (the token itself is never logged). */
    devTokenFile?: string;
    /**
     * Graceful stop: no new requests, the in-flight operation finishes (or, with `cancel`, is cancelled
     * safely and recorded as interrupted), probes stop.
     */
    close(opts?: { cancel?: boolean }): Promise<void>;
}

/** How long answers still being written at the end of a graceful stop may take before their connections are cut. */
const CLOSE_GRACE_MS = 2_000;

function readTokens(opts: ServeOptions, runDir: string, log: Logger): { tokens: StoredToken[]; devTokenFile?: string } {
    const file =
        opts.tokensFile ??
        process.env.EGRESS_TOKENS_FILE ??
        path.join(path.dirname(runDir), `tokens-${opts.stack}.json`);
    let devTokenFile: string | undefined;
    if (opts.stack === "dev" && !process.env.EGRESS_TOKENS) {
        const devToken = ensureDevToken(file);
        if (devToken)
            fs.writeFileSync((devTokenFile = path.join(path.dirname(file), "dev-token")), devToken + "\n", {
                mode: 0o600,
            });
    }
    const tokens = [...(fs.existsSync(file) ? loadTokens(file) : []), ...tokensFromEnv(process.env.EGRESS_TOKENS)];
    if (!tokens.length)
        throw new Error(
            `no API tokens: create ${file} ({"tokens":[{"name","sha256","scopes"}]}) or set EGRESS_TOKENS=name:scope+scope:token`,
        );
    log.info(
        {
            tokens: tokens.map((t) => ({ name: t.name, scopes: t.scopes, gatewayConcurrency: t.gatewayConcurrency })),
            file,
        },
        "loaded API tokens",
    );
    return { tokens, devTokenFile };
}

/** Starts the service: recovers the stack, rebuilds the fleet view from outputs, then accepts requests. */
export async function startService(opts: ServeOptions): Promise<RunningService> {
    // Before anything listens: a bad interval must not leave a half-started service behind.
    if (
        opts.reconcileIntervalMs !== undefined &&
        !(Number.isFinite(opts.reconcileIntervalMs) && opts.reconcileIntervalMs >= 0)
    )
        throw new RangeError(
            `reconcileIntervalMs must be 0 (off) or a positive number of milliseconds, got ${opts.reconcileIntervalMs}`,
        );
    const log = opts.log ?? createLogger();
    const runDir = opts.runDir ?? engineHome().runDir;
    const home = { ...engineHome(), runDir };
    const driver = new StackDriver({
        workDir: opts.projectRoot,
        stack: opts.stack,
        home,
        env: opts.engineEnv,
        onNotice: (line) => log.warn({ stack: opts.stack }, line),
    });
    assertNoOtherService(runDir, opts.stack, (a) =>
        log.warn({ pid: a.pid, since: a.since }, "removed the announcement of a service that is no longer running"),
    );
    /** The stack's one writer lock (shared with CLI writers); a dead holder's lock is cleared and logged. */
    const writerLock = (signal?: AbortSignal) =>
        acquireWriterLock({
            runDir,
            stack: opts.stack,
            command: "egress serve",
            waitMs: opts.writerLockWaitMs ?? 30 * 60_000,
            pollMs: 250,
            signal,
            onWait: (h) => log.warn({ holder: h }, `waiting for the stack's writer lock, held by ${describeHolder(h)}`),
            onStale: (h) =>
                log.warn(
                    { holder: h },
                    `removed a stale writer lock left by ${describeHolder(h)} (the process is gone)`,
                ),
        });
    const ops = new OperationLog(path.join(runDir, `operations-${opts.stack}.json`));
    for (const op of ops.recoverInterrupted())
        log.warn(
            { operation: op.id, kind: op.kind, desired: op.desired },
            "operation was interrupted by a previous stop",
        );
    // eslint-disable-next-line prefer-const -- read by closures made before it exists (issue 18: a start-up without `let x!`)
    let fleet!: Fleet;
    const metrics = createMetrics({
        pools: () => fleet.poolConfigs().map((p) => ({ name: p.name, desired: p.replicas })),
        poolCounts: () => fleet.poolCounts(),
        members: () =>
            fleet.list().map((m) => ({ id: m.id, pool: m.pool, healthy: health.get(m.id)?.state === "healthy" })),
    });
    const { tokens, devTokenFile } = readTokens(opts, runDir, log);
    let ready: { ok: true } | { ok: false; reason: string } = { ok: false, reason: "starting: recovering the stack" };

    const server = http.createServer();
    answerProtocolErrors(server, log);
    await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(opts.port ?? 8080, opts.host ?? "127.0.0.1", () => resolve());
    });
    const port = (server.address() as { port: number }).port;
    const url = `http://${opts.host ?? "127.0.0.1"}:${port}`;

    const checkUrl = opts.checkUrl ?? `http://127.0.0.1:${port}/v1/echo`;
    const health = new HealthMonitor({
        intervalMs: opts.probeIntervalMs ?? 10_000,
        checkUrl,
        credentials: (m) => fleet.credentialsOf(m),
        onTransition: (t) => {
            log[t.to === "unhealthy" ? "warn" : "info"](
                { proxy: t.id, from: t.from, to: t.to, reason: t.reason },
                "proxy health changed",
            );
            fleet.healthChanged(t.id, t.to);
        },
        onProbe: (p) => {
            metrics.probes.inc({ result: p.ok ? "ok" : "fail" });
            metrics.probeLatency.observe(p.latencyMs / 1000);
        },
    });
    const leaseOptions = {
        onError: (proxyId: string) => health.reportLeaseError(proxyId),
        targetCooldownSeconds: opts.targetCooldownSeconds,
    };
    // One prefix per stack, so stacks can share a Redis; the URL itself is a secret (never logged whole).
    const redisStore =
        opts.store?.kind === "redis"
            ? new RedisLeaseStore({
                  ...leaseOptions,
                  url: opts.store.url,
                  prefix: `egress:${opts.stack}:`,
                  log: log.child({ component: "store" }),
              })
            : undefined;
    const leases: LeaseStore = redisStore ?? new LeaseManager(leaseOptions);
    if (redisStore && !(await redisStore.connect()))
        log.warn(
            redisStore.ready(),
            "starting without the lease store: leases answer 503 store_unavailable until it is reachable",
        );
    fleet = new Fleet(leases, health);
    // Listening before recovery (like the API): a taken port fails the start at once; until ready it answers 503.
    let gateway: Gateway | undefined;
    let gatewayAt: { port: number; url: string } | undefined;
    if (opts.gateway) {
        gateway = new Gateway({
            ...opts.gateway,
            fleet,
            tokens,
            metrics: metrics.gateway,
            log: log.child({ component: "gateway" }),
            ready: () => ready,
            protectedTargets: storeEndpoints(opts.store),
        });
        try {
            gatewayAt = await gateway.listen();
        } catch (e) {
            server.closeAllConnections();
            await new Promise<void>((r) => server.close(() => r()));
            await redisStore?.close();
            if ((e as NodeJS.ErrnoException).code === "EADDRINUSE")
                throw new Error(
                    `the gateway's port ${opts.gateway.host ?? "127.0.0.1"}:${opts.gateway.port} is in use (another egress serve?): pick another with --gateway-port, or 0 for no gateway`,
                );
            throw e;
        }
    }
    const providerHealth = new ProviderHealth({
        log,
        metrics,
        intervalMs: opts.providerCheckIntervalMs ?? 60_000,
        timeoutMs: opts.providerCheckTimeoutMs ?? 30_000,
    });
    if (!providerHealth.enabled)
        log.warn(
            "provider health checks are off (--provider-check-interval 0): no provider is reported down, and self-healing is not held back by one",
        );

    /**
     * Re-syncs the fleet with the stack: from `proxies` an update just returned, else from the members
     * state holds: read from the checkpoint file when the backend is a local one (fast: no CLI start),
     * else through the engine. (After a failed or interrupted update the stack output still lists the
     * previous run's members; the member components hold what really exists.)
     */
    const backendDir = fileBackendDir(home, opts.engineEnv);
    const refreshFleet = async (proxies?: ProxyMember[]) => {
        proxies ??= await driver.membersInState();
        // Credentials before the members, so a member requiring them is never probed or leased without.
        // Only the engine decrypts them (one CLI call), so only stacks that have such members pay for it.
        if (proxies.some((m) => m.auth)) {
            try {
                fleet.setCredentials(await driver.credentials());
            } catch (e) {
                log.warn(
                    { err: e },
                    "reading the proxy credentials (stack output `credentials`) failed; members requiring them keep the ones read before",
                );
            }
        }
        fleet.sync(proxies, loadStackConfig(opts.projectRoot, opts.stack).pools);
    };
    // eslint-disable-next-line prefer-const -- read by closures made before it exists (issue 18: a start-up without `let x!`)
    let reconciler!: Reconciler;
    const drainer = new Drainer({
        fleet,
        log: log.child({ component: "drain" }),
        drainSeconds: (pool) =>
            loadStackConfig(opts.projectRoot, opts.stack).pools.find((p) => p.name === pool)?.drainSeconds ?? 0,
    });
    const scaler = new Scaler({
        driver,
        projectRoot: opts.projectRoot,
        stack: opts.stack,
        ops,
        log,
        lock: writerLock,
        drain: { drainer, members: () => fleet.list() },
        onSettled: async (op, proxies) => {
            metrics.operations.inc({ kind: op.kind, result: op.status });
            if (op.startedAt && op.finishedAt)
                metrics.operationDuration.observe(
                    { kind: op.kind },
                    (Date.parse(op.finishedAt) - Date.parse(op.startedAt)) / 1000,
                );
            reconciler.settled(op);
            await rebuildGoneChecks().catch((e) =>
                log.warn({ err: e }, "reading the stack's installation failed; liveness hooks keep the previous one"),
            );
            await refreshFleet(proxies);
            fleet.operationSettled(op);
        },
    });
    let goneChecks = new Map<string, GoneCheck>();
    let goneProviders: Record<string, ProviderConfig> = {};
    // Liveness hooks know the stack's installation: read again after every operation, since a new stack's
    // first `up` is what records it.
    const rebuildGoneChecks = async () => {
        const { installation } = await driver.installation();
        goneChecks = new Map(
            Object.entries(goneProviders).flatMap(([name, entry]) => {
                const check = goneCheckFor({ runDir, project: PROJECT, stack: opts.stack, installation, entry, log });
                return check ? [[name, check] as const] : [];
            }),
        );
    };
    reconciler = new Reconciler({
        intervalMs: opts.reconcileIntervalMs ?? 60_000,
        log: log.child({ component: "reconcile" }),
        scaler,
        backoff: opts.healBackoff,
        members: () => fleet.proxies(),
        health: (id) => health.get(id),
        providers: () => providerHealth.snapshot(),
        pools: () => loadStackConfig(opts.projectRoot, opts.stack).pools,
        goneChecks: () => goneChecks,
        onRepair: (pool, reason) => metrics.heal(pool, reason),
    });
    const timeline = new Timeline({ intervalMs: opts.timelineIntervalMs, counts: () => fleet.poolCounts() });
    const appDeps: AppDeps = {
        projectRoot: opts.projectRoot,
        stack: opts.stack,
        version: packageVersion(),
        log,
        auth: authenticate(tokens),
        scaler,
        ops,
        fleet,
        metrics,
        providerHealth: () => providerHealth.snapshot(),
        reconcile: () => reconciler.status(),
        timeline,
        ready: () => ready,
        sseHeartbeatMs: opts.sseHeartbeatMs,
        gateway,
        storeReady: redisStore && (() => redisStore.ready()),
    };
    server.on("request", createApp(appDeps));

    // Restart safety: clear what a crashed run left, rebuild the view from outputs, then accept scale.
    let local: Awaited<ReturnType<typeof announceService>>;
    try {
        const lock = await writerLock();
        try {
            for (const what of await driver.recover()) log.warn({ stack: opts.stack }, what);
        } finally {
            lock.release();
        }
        await refreshFleet();
        const raw = await driver.config();
        const cfg = parseEgressConfig({ providers: raw.providers ?? {}, pools: raw.pools ?? [] }, opts.projectRoot);
        const remote = Object.entries(cfg.providers)
            .filter(([, e]) => !kindOf(e).onThisMachine)
            .map(([n]) => n);
        if (remote.length && !opts.checkUrl)
            log.warn(
                { providers: remote, checkUrl: checkUrl },
                "health probes go to this service's loopback echo, which proxies on other machines cannot reach: their members stay unhealthy and are never leased; set --check-url (EGRESS_CHECK_URL) to a URL the proxies can reach",
            );
        providerHealth.setCheckers(
            Object.entries(cfg.providers).map(([name, entry]) =>
                checkerFor(name, entry, runDir, opts.stack, { timeoutMs: providerHealth.timeoutMs, log }),
            ),
        );
        goneProviders = cfg.providers;
        await rebuildGoneChecks();
        // The CLI's way in: the same API on a 0600 unix socket, announced in the run dir; its scope is
        // the file permission, so it takes no token. Removed when the TCP server closes.
        local = await announceService({
            runDir,
            stack: opts.stack,
            url,
            listener: createApp({ ...appDeps, auth: () => (_req, _res, next) => next() }),
        });
    } catch (e) {
        // Nothing may keep the process alive after a failed start: the CLI must exit non-zero.
        server.closeAllConnections();
        await new Promise<void>((r) => server.close(() => r()));
        await gateway?.close(0);
        await redisStore?.close();
        throw e;
    }
    providerHealth.start();
    health.start();
    timeline.start();
    // Leases expire lazily on every call; the sweep also drops old target cooldowns and ended-lease records.
    const sweeper = setInterval(() => leases.sweep(), 5_000).unref();
    // A person may run `egress up` beside the service: follow its checkpoint writes at once, and re-read
    // outputs now and then in case the watch misses one (or the backend is not a directory).
    const followOutside = (why: string) => () => {
        if (!scaler.applying())
            refreshFleet().then(
                () => log.debug({ why }, "fleet re-read from stack outputs"),
                (e) => log.warn({ err: e }, "re-reading stack outputs failed"),
            );
    };
    const checkpointWatch = watchStackCheckpoint({
        backendDir,
        stack: opts.stack,
        version: () => driver.stateVersion(),
        log,
        onChange: followOutside("checkpoint changed"),
    });
    const outputsPoll = setInterval(followOutside("poll"), opts.outputsPollMs ?? 30_000).unref();
    ready = { ok: true };
    scaler.open();
    server.once("close", () => {
        checkpointWatch?.close();
        local.close().catch((e) => log.warn({ err: e }, "closing the local socket failed"));
    });
    if (opts.converge ?? true) scaler.converge();
    reconciler.start();
    log.info(
        { url, gateway: gatewayAt?.url, stack: opts.stack, members: fleet.proxies().length, checkUrl },
        "egress service ready",
    );

    return {
        url,
        port,
        gatewayUrl: gatewayAt?.url,
        gatewayPort: gatewayAt?.port,
        driver,
        scaler,
        fleet,
        reconciler,
        devTokenFile,
        async close(closeOpts = {}) {
            // The listener stays open while the running operation finishes: every request but /healthz
            // and /metrics is answered 503 not_ready with Retry-After (app.ts), not refused.
            const stopping = {
                ok: false,
                reason: "the service is shutting down; retry shortly or against another instance",
                stopping: true,
            } as const;
            ready = stopping;
            log.info(
                { operationRunning: scaler.busy() },
                "stopping: answering 503 not_ready until the running operation has finished",
            );
            await reconciler.stop();
            await scaler.drain(closeOpts);
            clearInterval(sweeper);
            clearInterval(outputsPoll);
            timeline.stop();
            await health.stop();
            await providerHealth.stop();
            const closed = new Promise<void>((r) => server.close(() => r()));
            const gatewayClosed = gateway?.close(CLOSE_GRACE_MS);
            server.closeIdleConnections();
            // Answers being written get a moment to finish, then whatever is left is cut.
            const cut = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
            await closed;
            await gatewayClosed;
            clearTimeout(cut);
            await redisStore?.close();
            log.info("egress service stopped");
        },
    };
}

/** The lease store's address, which the gateway never relays to (gateway/protected-targets.ts). */
function storeEndpoints(store: StoreSpec | undefined): { what: string; host: string; port: number }[] {
    if (store?.kind !== "redis") return [];
    const u = new URL(store.url);
    return [{ what: "the lease store", host: u.hostname, port: Number(u.port || 6379) }];
}
