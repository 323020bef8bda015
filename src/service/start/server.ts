import type * as tls from "node:tls";
import type { Logger } from "pino";
import { type EngineHome, engineHome, packageVersion } from "../../engine";
import { createLogger } from "../../log/logger";
import { createApp } from "../api/app";
import type { GatewayAddresses } from "../gateway";
import { assertNoOtherService } from "../../state/cluster/announce";
import { StackLead } from "./leading";
import { Lifecycle } from "./lifecycle";
import { checkServeOptions, type RunningService, type ServeOptions } from "./options";
import { buildParts, type Parts } from "./parts";
import { sharedStoreOf } from "./replicated-parts";
import { subscribeParts } from "./subscribe-parts";
import { readTokens } from "./tokens";
import { appDepsOf, gatewayOf } from "./front";
import { type ApiListener, listenApi } from "./listeners";
import { type LifeInputs, serviceLife } from "./service-life";
import { FAILED_START, stopService } from "./stop";
import { reloadTls } from "./tls";

export type { RunningService, ServeOptions } from "./options";

/**
 * Starts the service: listens first (a taken port fails the start at once; until ready every request is
 * answered 503), builds and subscribes its parts (parts.ts), then starts its lifecycle (service-life.ts,
 * one list read top to bottom): the lease store, the gateway, the recovery (recover.ts), what watches
 * the members, ready, the leader election and the loops. A part that fails to start stops the ones
 * started before it, so the CLI exits non-zero instead of hanging; `close` walks the list backward.
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
    const state: LifeInputs["state"] = { ready: { ok: false, reason: "starting: recovering the stack" } };
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
    if (!parts.providerHealth.enabled)
        log.warn(
            "provider health checks are off (--provider-check-interval 0): no provider is reported down, and self-healing is not held back by one",
        );
    // Read top to bottom in service-life.ts; a part that fails stops the ones started before it.
    const life = new Lifecycle(serviceLife({ opts, log, home, parts, api, gateway, lead, state }), log);
    await life.start(FAILED_START);
    const { gatewayAt } = state;
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
        close: (closeOpts = {}) => stopService(life, { parts, log, stopping }, closeOpts),
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
