import type * as tls from "node:tls";
import type { Logger } from "pino";
import { type EngineHome, engineHome, fileBackendDir, packageVersion } from "../../engine";
import { createLogger } from "../../log/logger";
import { createApp } from "../api/app";
import { watchStackCheckpoint } from "../control/stack-watch";
import type { Gateway, GatewayAddresses } from "../gateway";
import { assertNoOtherService } from "../../state/cluster/announce";
import { StackLead } from "./leading";
import { checkServeOptions, type RunningService, type ServeOptions } from "./options";
import { buildParts, type Parts, type Readiness } from "./parts";
import { sharedStoreOf } from "./replicated-parts";
import { subscribeParts } from "./subscribe-parts";
import { readTokens } from "./tokens";
import { appDepsOf, gatewayOf } from "./front";
import { type ApiListener, listenApi, listenGateway } from "./listeners";
import { stopService } from "./stop";
import { reloadTls } from "./tls";

export type { RunningService, ServeOptions } from "./options";

/**
 * Starts the service: listens (a taken port fails the start at once; until ready every request is
 * answered 503), builds and subscribes its parts (parts.ts), recovers the stack and rebuilds the fleet
 * view from state (recover.ts), then accepts requests and starts its loops.
 */
export async function startService(opts: ServeOptions): Promise<RunningService> {
    checkServeOptions(opts);
    const log = opts.log ?? createLogger();
    const runDir = opts.runDir ?? engineHome().runDir;
    const home = { ...engineHome(), runDir };
    // Replicas of one stack share a Redis store and elect a leader (cluster/); alone, a second service
    // of the stack is refused (two owners of desired state).
    if (!sharedStoreOf(opts))
        assertNoOtherService(runDir, opts.stack, (a) =>
            log.warn({ pid: a.pid, since: a.since }, "removed the announcement of a service that is no longer running"),
        );
    const { tokens, devTokenFile } = readTokens(opts, runDir, log);
    const state: { ready: Readiness } = { ready: { ok: false, reason: "starting: recovering the stack" } };
    const ready = () => state.ready;

    const api = await listenApi(opts, log);
    const { server, url, checkUrl } = api;
    const startedAt = new Date().toISOString();
    // From here to `server.on("request")` nothing waits for I/O (partsOrClose resolves in the same turn
    // unless it fails), so no request arrives before the app is there.
    const version = packageVersion();
    const parts = await partsOrClose(opts, log, home, api, version);
    const front = { opts, parts, api, tokens, log, home, version, startedAt, ready };
    const gateway = gatewayOf(front);
    const appDeps = appDepsOf(front, gateway);
    server.on("request", createApp(appDeps));
    const { cluster } = parts;
    const lead = new StackLead(parts, {
        opts,
        log,
        runDir,
        checkUrl,
        url,
        localListener: createApp({ ...appDeps, auth: () => (_req, _res, next) => next() }),
        stillLeading: () => cluster?.isLeader() ?? true,
        resign: async () => cluster?.resign(),
        leadingSince: cluster && (() => cluster.leadingSince()),
    });
    const gatewayAt = await recoverOrClose(opts, log, parts, api, gateway, lead);
    const timers = await startWatching(opts, log, home, parts, api, lead);
    state.ready = { ok: true };
    if (cluster) {
        cluster.subscribe((on) => lead.changed(on));
        await cluster.start();
        await lead.idle(); // a replica that won the lock at once has recovered and converged by "ready"
    }
    parts.reconciler.start();
    parts.autoscaler.start();
    parts.rotator.start();
    logReady(opts, log, parts, api, gatewayAt);
    const stopping = () => {
        state.ready = {
            ok: false,
            reason: "the service is shutting down; retry shortly or against another instance",
            stopping: true,
        };
    };
    return {
        url,
        port: api.port,
        gatewayUrl: gatewayAt?.url,
        gatewayPort: gatewayAt?.port,
        socksUrl: gatewayAt?.socksUrl,
        socksPort: gatewayAt?.socksPort,
        gatewayTlsUrl: gatewayAt?.tlsUrl,
        gatewayTlsPort: gatewayAt?.tlsPort,
        reloadTls:
            opts.tls &&
            (() => reloadTls(opts.tls!, () => [server, ...(gateway?.tlsServers() ?? [])] as tls.Server[], log)),
        driver: parts.driver,
        scaler: parts.scaler,
        fleet: parts.fleet,
        reconciler: parts.reconciler,
        devTokenFile,
        close: (closeOpts = {}) => stopService({ parts, server, gateway, timers, log, stopping }, closeOpts),
    };
}

/** Builds and subscribes the parts; a stack config they refuse closes the listener, so the CLI exits non-zero instead of hanging. */
async function partsOrClose(
    opts: ServeOptions,
    log: Logger,
    home: EngineHome,
    api: ApiListener,
    version: string,
): Promise<Parts> {
    try {
        const parts = buildParts(opts, log, home, {
            checkUrl: api.checkUrl,
            checkTls: api.checkTls,
            url: api.url,
            version,
        });
        subscribeParts(parts, log);
        return parts;
    } catch (e) {
        await new Promise<void>((r) => api.server.close(() => r()));
        throw e;
    }
}

/**
 * Connects the lease store, listens on the gateway's ports and recovers: alone, this process leads from
 * the start (recovery before anything is served); a replica serves from what state holds and takes the
 * stack up when it wins the leader lock. A failure closes everything opened, so nothing keeps the process
 * alive and the CLI exits non-zero.
 */
async function recoverOrClose(
    opts: ServeOptions,
    log: Logger,
    parts: Parts,
    api: ApiListener,
    gateway: Gateway | undefined,
    lead: StackLead,
): Promise<GatewayAddresses | undefined> {
    const { redisStore, cluster, providerHealth } = parts;
    if (!providerHealth.enabled)
        log.warn(
            "provider health checks are off (--provider-check-interval 0): no provider is reported down, and self-healing is not held back by one",
        );
    try {
        if (redisStore && !(await redisStore.connect()))
            log.warn(
                redisStore.ready(),
                "starting without the lease store: leases answer 503 store_unavailable until it is reachable",
            );
        const gatewayAt = gateway && (await listenGateway(gateway, opts.gateway!));
        if (gatewayAt?.url) cluster?.advertiseGateway(gatewayAt.url);
        if (cluster) {
            await cluster.assertOneHome();
            await parts.refreshFleet();
        } else await lead.lead();
        return gatewayAt;
    } catch (e) {
        api.server.closeAllConnections();
        await new Promise<void>((r) => api.server.close(() => r()));
        await gateway?.close(0);
        parts.session?.redis.disconnect();
        await redisStore?.close();
        throw e;
    }
}

/**
 * Starts what watches the members before the service is ready: provider checks, probes (alone) or the
 * leader's verdicts (a replica probes only while it leads: StackLead), the scale queue, the timeline, the
 * lease sweep, and what follows an `egress up` run beside the service. Returns the service's own timers.
 */
async function startWatching(
    opts: ServeOptions,
    log: Logger,
    home: EngineHome,
    parts: Parts,
    api: ApiListener,
    lead: StackLead,
): Promise<NodeJS.Timeout[]> {
    parts.providerHealth.start();
    if (parts.verdicts) await parts.verdicts.start();
    else parts.health.start();
    await parts.scaleQueue?.start();
    await parts.timeline.start();
    // Leases expire lazily on every call; the sweep also drops old target cooldowns and ended-lease records.
    const sweeper = setInterval(() => parts.leases.sweep(), 5_000).unref();
    // A person may run `egress up` beside the service: follow its checkpoint writes at once, and re-read
    // outputs now and then in case the watch misses one (or the backend is not a directory).
    const followOutside = (why: string) => () => {
        if (!parts.scaler.applying())
            parts.refreshFleet().then(
                () => log.debug({ why }, "fleet re-read from stack outputs"),
                (e) => log.warn({ err: e }, "re-reading stack outputs failed"),
            );
    };
    const checkpointWatch = watchStackCheckpoint({
        backendDir: fileBackendDir(home, opts.engineEnv),
        stack: opts.stack,
        version: () => parts.driver.stateVersion(),
        log,
        onChange: followOutside("checkpoint changed"),
    });
    const outputsPoll = setInterval(followOutside("poll"), opts.outputsPollMs ?? 30_000).unref();
    api.server.once("close", () => {
        checkpointWatch?.close();
        lead.close().catch((e) => log.warn({ err: e }, "closing the local socket failed"));
    });
    return [sweeper, outputsPoll];
}

function logReady(
    opts: ServeOptions,
    log: Logger,
    parts: Parts,
    api: ApiListener,
    gatewayAt: GatewayAddresses | undefined,
): void {
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
