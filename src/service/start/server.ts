import * as os from "node:os";
import type * as tls from "node:tls";
import type { Logger } from "pino";
import { type EngineHome, engineHome, packageVersion, stateBackend } from "../../engine";
import { createLogger } from "../../log/logger";
import { createApp } from "../api/app";
import type { AppDeps } from "../api/deps";
import { authenticate } from "../http/auth";
import { Gateway } from "../gateway";
import { assertNoOtherService } from "./announce";
import { leaderForwarder } from "../api/forward";
import { clusterView } from "../cluster/view";
import { StackLead } from "./leading";
import { checkServeOptions, type RunningService, type ServeOptions } from "./options";
import { buildParts, type Parts, type Readiness } from "./parts";
import { subscribeParts } from "./subscribe-parts";
import { isReplica } from "./store-session";
import { readTokens } from "./tokens";
import { protectedEndpoints } from "./protected-endpoints";
import { findOperation } from "../operations/operation";
import { type ApiListener, listenApi } from "./listeners";
import { reloadTls } from "./tls";
import { type Life, serviceLife } from "./life-parts";
import { startAll, stopAll } from "./lifecycle";

export type { RunningService, ServeOptions } from "./options";

/**
 * Starts the service: listens (a taken port fails the start at once; until ready every request is
 * answered 503), builds and subscribes its parts (parts.ts), then starts them in order (life-parts.ts:
 * the store session, the gateway, the stack's recovery or the fleet view from state, the loops), and
 * stops them in the reverse order.
 */
export async function startService(opts: ServeOptions): Promise<RunningService> {
    checkServeOptions(opts);
    const log = opts.log ?? createLogger();
    const runDir = opts.runDir ?? engineHome().runDir;
    const home = { ...engineHome(), runDir };
    // Replicas of one stack share a Redis store and elect a leader (cluster/); alone, a second service
    // of the stack is refused (two owners of desired state).
    if (!isReplica(opts.store))
        assertNoOtherService(runDir, opts.stack, (a) =>
            log.warn({ pid: a.pid, since: a.since }, "removed the announcement of a service that is no longer running"),
        );
    const { tokens, devTokenFile } = readTokens(opts, runDir, log);
    let ready: Readiness = { ok: false, reason: "starting: recovering the stack" };
    const api = await listenApi(opts, log);
    const version = packageVersion();
    // From here to `server.on("request")` nothing awaits, so no request arrives before the app is there.
    let parts: Parts;
    try {
        parts = buildParts(opts, log, home, { checkUrl: api.checkUrl, checkTls: api.checkTls, url: api.url, version });
        subscribeParts(parts, log);
    } catch (e) {
        // A stack config the parts refuse (they read its pools): the listening server must not keep the
        // process alive, or the CLI would hang instead of exiting non-zero.
        await new Promise<void>((r) => api.server.close(() => r()));
        throw e;
    }
    if (!parts.providerHealth.enabled)
        log.warn(
            "provider health checks are off (--provider-check-interval 0): no provider is reported down, and self-healing is not held back by one",
        );
    const gateway = gatewayOf(opts, parts, api, home, log, tokens, () => ready);
    const appDeps = appDepsOf(opts, parts, { api, version, log, tokens, gateway, ready: () => ready });
    api.server.on("request", createApp(appDeps));
    const lead = stackLeadOf(opts, parts, api, runDir, log, appDeps);
    const life: Life = { opts, log, home, parts, api, gateway, lead, setReady: (r) => (ready = r) };
    const list = serviceLife(life);
    await startAll(list);
    logReady(opts, parts, life);
    return {
        ...serviceAddresses(opts, life, devTokenFile),
        async close(closeOpts = {}) {
            // The listener stays open while the running operation finishes: every request but /healthz
            // and /metrics is answered 503 not_ready with Retry-After (app.ts), not refused.
            ready = {
                ok: false,
                reason: "the service is shutting down; retry shortly or against another instance",
                stopping: true,
            };
            log.info(
                { operationRunning: parts.scaler.busy() },
                "stopping: answering 503 not_ready until the running operation has finished",
            );
            await stopAll(list, { drain: closeOpts });
            log.info("egress service stopped");
        },
    };
}

function gatewayOf(
    opts: ServeOptions,
    parts: Parts,
    api: ApiListener,
    home: EngineHome,
    log: Logger,
    tokens: ReturnType<typeof readTokens>["tokens"],
    ready: () => Readiness,
): Gateway | undefined {
    if (!opts.gateway) return undefined;
    return new Gateway({
        ...opts.gateway,
        tls: api.tls,
        fleet: parts.fleet,
        tokens,
        metrics: parts.metrics.gateway,
        log: log.child({ component: "gateway" }),
        ready,
        protectedTargets: protectedEndpoints(opts.store, stateBackend(home, opts.engineEnv), {
            host: opts.host ?? "127.0.0.1",
            port: api.port,
        }),
    });
}

function appDepsOf(
    opts: ServeOptions,
    p: Parts,
    o: {
        api: ApiListener;
        version: string;
        log: Logger;
        tokens: ReturnType<typeof readTokens>["tokens"];
        gateway?: Gateway;
        ready: () => Readiness;
    },
): AppDeps {
    const { cluster, scaleQueue, redisStore, verdicts } = p;
    const startedAt = new Date().toISOString();
    const self = { id: `${os.hostname()}-${process.pid}`, url: o.api.url, version: o.version, startedAt };
    return {
        projectRoot: opts.projectRoot,
        stack: opts.stack,
        version: o.version,
        log: o.log,
        auth: authenticate(o.tokens),
        scaler: p.scaler,
        ops: p.ops,
        fleet: p.fleet,
        metrics: p.metrics,
        providerHealth: () => p.providerHealth.snapshot(),
        reconcile: () => p.reconciler.status(),
        autoscaler: p.autoscaler,
        rotator: p.rotator,
        timeline: p.timeline,
        ready: o.ready,
        sseHeartbeatMs: opts.sseHeartbeatMs,
        gateway: o.gateway,
        storeReady: redisStore && (() => redisStore.ready()),
        verdicts: verdicts && (() => verdicts.status()),
        cluster: () => clusterView(cluster, self),
        storedDesired: p.desired && (async () => (await p.desired!.read())?.counts),
        opEvents: p.events,
        storedOperation: p.journal && (async (id) => findOperation(await p.journal!.read(), id)),
        forward: cluster && leaderForwarder(cluster, o.log.child({ component: "cluster" })),
        scaleQueue: scaleQueue && {
            following: () => !p.scaler.accepts(),
            enqueue: (pool, replicas) => scaleQueue.enqueue(pool, replicas),
            peek: (id) => scaleQueue.peek(id),
        },
    };
}

/** What leading the stack means (leading.ts); the CLI's unix socket gets the API without tokens. */
function stackLeadOf(
    opts: ServeOptions,
    parts: Parts,
    api: ApiListener,
    runDir: string,
    log: Logger,
    appDeps: AppDeps,
): StackLead {
    const { cluster } = parts;
    return new StackLead(parts, {
        opts,
        log,
        runDir,
        checkUrl: api.checkUrl,
        url: api.url,
        localListener: createApp({ ...appDeps, auth: () => (_req, _res, next) => next() }),
        stillLeading: () => cluster?.isLeader() ?? true,
        resign: async () => cluster?.resign(),
        leadingSince: cluster && (() => cluster.leadingSince()),
    });
}

function logReady(opts: ServeOptions, parts: Parts, { api, gatewayAt, log }: Life): void {
    const { cluster } = parts;
    log.info(
        {
            url: api.url,
            gateway: gatewayAt?.url,
            socks: gatewayAt?.socksUrl,
            gatewayTls: gatewayAt?.tlsUrl,
            gatewaySticky: gatewayAt?.sticky,
            ...(api.tls && { tls: { fingerprint: api.tls.fingerprint, validTo: api.tls.validTo } }),
            stack: opts.stack,
            members: parts.fleet.proxies().length,
            checkUrl: api.checkUrl,
            ...(cluster && { replica: cluster.id, leading: cluster.isLeader() }),
        },
        "egress service ready",
    );
}

/** The running service's addresses and parts, as RunningService lists them (all but `close`). */
function serviceAddresses(opts: ServeOptions, l: Life, devTokenFile?: string): Omit<RunningService, "close"> {
    const { api, gatewayAt, gateway, parts } = l;
    return {
        url: api.url,
        port: api.port,
        gatewayUrl: gatewayAt?.url,
        gatewayPort: gatewayAt?.port,
        socksUrl: gatewayAt?.socksUrl,
        socksPort: gatewayAt?.socksPort,
        gatewayTlsUrl: gatewayAt?.tlsUrl,
        gatewayTlsPort: gatewayAt?.tlsPort,
        reloadTls:
            opts.tls &&
            (() => reloadTls(opts.tls!, () => [api.server, ...(gateway?.tlsServers() ?? [])] as tls.Server[], l.log)),
        driver: parts.driver,
        scaler: parts.scaler,
        fleet: parts.fleet,
        reconciler: parts.reconciler,
        devTokenFile,
    };
}
