import * as os from "node:os";
import type * as tls from "node:tls";
import { engineHome, fileBackendDir, packageVersion, stateBackend } from "../../engine";
import { createLogger } from "../../log/logger";
import { createApp } from "../api/app";
import type { AppDeps } from "../api/deps";
import { authenticate } from "../http/auth";
import { watchStackCheckpoint } from "../control/stack-watch";
import { Gateway, type GatewayAddresses } from "../gateway";
import { assertNoOtherService } from "./announce";
import { leaderForwarder } from "../api/forward";
import { clusterView } from "../cluster/view";
import { StackLead } from "./leading";
import { checkServeOptions, type RunningService, type ServeOptions } from "./options";
import { buildParts, type Readiness } from "./parts";
import { subscribeParts } from "./subscribe-parts";
import { readTokens } from "./tokens";
import { protectedEndpoints } from "./protected-endpoints";
import { findOperation } from "../operations/operation";
import { listenApi, listenGateway } from "./listeners";
import { reloadTls } from "./tls";

export type { RunningService, ServeOptions } from "./options";

/** How long answers still being written at the end of a graceful stop may take before their connections are cut. */
const CLOSE_GRACE_MS = 2_000;

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
    if (opts.store?.kind !== "redis")
        assertNoOtherService(runDir, opts.stack, (a) =>
            log.warn({ pid: a.pid, since: a.since }, "removed the announcement of a service that is no longer running"),
        );
    const { tokens, devTokenFile } = readTokens(opts, runDir, log);
    let ready: Readiness = { ok: false, reason: "starting: recovering the stack" };

    const api = await listenApi(opts, log);
    const { server, port, url, checkUrl } = api;
    const startedAt = new Date().toISOString();

    // From here to `server.on("request")` nothing awaits, so no request arrives before the app is there.
    const version = packageVersion();
    let parts: ReturnType<typeof buildParts>;
    try {
        parts = buildParts(opts, log, home, { checkUrl, checkTls: api.checkTls, url, version });
        subscribeParts(parts, log);
    } catch (e) {
        // A stack config the parts refuse (they read its pools): the listening server must not keep the
        // process alive, or the CLI would hang instead of exiting non-zero.
        await new Promise<void>((r) => server.close(() => r()));
        throw e;
    }
    const {
        scaler,
        fleet,
        reconciler,
        redisStore,
        providerHealth,
        health,
        timeline,
        leases,
        cluster,
        verdicts,
        scaleQueue,
    } = parts;
    if (!providerHealth.enabled)
        log.warn(
            "provider health checks are off (--provider-check-interval 0): no provider is reported down, and self-healing is not held back by one",
        );
    const gateway =
        opts.gateway &&
        new Gateway({
            ...opts.gateway,
            tls: api.tls,
            fleet,
            tokens,
            metrics: parts.metrics.gateway,
            log: log.child({ component: "gateway" }),
            ready: () => ready,
            protectedTargets: protectedEndpoints(opts.store, stateBackend(home, opts.engineEnv), {
                host: opts.host ?? "127.0.0.1",
                port,
            }),
        });
    const appDeps: AppDeps = {
        projectRoot: opts.projectRoot,
        stack: opts.stack,
        version,
        log,
        auth: authenticate(tokens),
        scaler,
        ops: parts.ops,
        fleet,
        metrics: parts.metrics,
        providerHealth: () => providerHealth.snapshot(),
        reconcile: () => reconciler.status(),
        autoscaler: parts.autoscaler,
        rotator: parts.rotator,
        timeline,
        ready: () => ready,
        sseHeartbeatMs: opts.sseHeartbeatMs,
        gateway,
        storeReady: redisStore && (() => redisStore.ready()),
        verdicts: verdicts && (() => verdicts.status()),
        cluster: () => clusterView(cluster, { id: `${os.hostname()}-${process.pid}`, url, version, startedAt }),
        storedDesired: parts.desired && (async () => (await parts.desired!.read())?.counts),
        opEvents: parts.events,
        storedOperation: parts.journal && (async (id) => findOperation(await parts.journal!.read(), id)),
        forward: cluster && leaderForwarder(cluster, log.child({ component: "cluster" })),
        scaleQueue: scaleQueue && {
            following: () => !scaler.accepts(),
            enqueue: (pool, replicas) => scaleQueue.enqueue(pool, replicas),
            peek: (id) => scaleQueue.peek(id),
        },
    };
    server.on("request", createApp(appDeps));
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

    let gatewayAt: GatewayAddresses | undefined;
    try {
        if (redisStore && !(await redisStore.connect()))
            log.warn(
                redisStore.ready(),
                "starting without the lease store: leases answer 503 store_unavailable until it is reachable",
            );
        if (gateway) gatewayAt = await listenGateway(gateway, opts.gateway!);
        if (gatewayAt?.url) cluster?.advertiseGateway(gatewayAt.url);
        // Alone, this process leads from the start: recovery before anything is served. A replica serves
        // from what state holds and takes the stack up when it wins the leader lock.
        if (cluster) {
            await cluster.assertOneHome();
            await parts.refreshFleet();
        } else await lead.lead();
    } catch (e) {
        // Nothing may keep the process alive after a failed start: the CLI must exit non-zero.
        server.closeAllConnections();
        await new Promise<void>((r) => server.close(() => r()));
        await gateway?.close(0);
        await redisStore?.close();
        throw e;
    }
    providerHealth.start();
    // Alone, this process probes from now on; a replica probes only while it leads (StackLead) and
    // otherwise shows the leader's verdicts, read from now on.
    if (verdicts) await verdicts.start();
    else health.start();
    await scaleQueue?.start();
    await timeline.start();
    // Leases expire lazily on every call; the sweep also drops old target cooldowns and ended-lease records.
    const sweeper = setInterval(() => leases.sweep(), 5_000).unref();
    // A person may run `egress up` beside the service: follow its checkpoint writes at once, and re-read
    // outputs now and then in case the watch misses one (or the backend is not a directory).
    const followOutside = (why: string) => () => {
        if (!scaler.applying())
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
    ready = { ok: true };
    server.once("close", () => {
        checkpointWatch?.close();
        lead.close().catch((e) => log.warn({ err: e }, "closing the local socket failed"));
    });
    if (cluster) {
        cluster.subscribe((on) => lead.changed(on));
        await cluster.start();
        await lead.idle(); // a replica that won the lock at once has recovered and converged by "ready"
    }
    reconciler.start();
    parts.autoscaler.start();
    parts.rotator.start();
    log.info(
        {
            url,
            gateway: gatewayAt?.url,
            socks: gatewayAt?.socksUrl,
            gatewayTls: gatewayAt?.tlsUrl,
            gatewaySticky: gatewayAt?.sticky,
            ...(api.tls && { tls: { fingerprint: api.tls.fingerprint, validTo: api.tls.validTo } }),
            stack: opts.stack,
            members: fleet.proxies().length,
            checkUrl,
            ...(cluster && { replica: cluster.id, leading: cluster.isLeader() }),
        },
        "egress service ready",
    );

    return {
        url,
        port,
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
        scaler,
        fleet,
        reconciler,
        devTokenFile,
        async close(closeOpts = {}) {
            // The listener stays open while the running operation finishes: every request but /healthz
            // and /metrics is answered 503 not_ready with Retry-After (app.ts), not refused.
            ready = {
                ok: false,
                reason: "the service is shutting down; retry shortly or against another instance",
                stopping: true,
            };
            log.info(
                { operationRunning: scaler.busy() },
                "stopping: answering 503 not_ready until the running operation has finished",
            );
            await reconciler.stop();
            await parts.autoscaler.stop();
            await parts.rotator.stop();
            await scaleQueue?.follow(); // what followers queue from now on waits for the next leader
            await scaler.drain(closeOpts);
            // The settled (or set-aside) records reach the store's journal while this replica still holds the lock.
            await parts.ops
                .flushed()
                .catch((e) => log.warn({ err: e }, "the operation journal could not be written before stopping"));
            await parts.desired
                ?.flushed()
                .catch((e) => log.warn({ err: e }, "the desired counts could not be written before stopping"));
            await parts.events?.flushed(); // appended only while this replica holds the lock
            await cluster?.stop(); // after the running operation: the lock guards it to the end
            parts.journal?.close();
            parts.events?.close();
            parts.desired?.close();
            parts.healStore?.close(); // after the running operation: a heal settling writes its back-off
            clearInterval(sweeper);
            clearInterval(outputsPoll);
            await timeline.stop();
            await health.stop();
            await verdicts?.close();
            await scaleQueue?.close();
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
