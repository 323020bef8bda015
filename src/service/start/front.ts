import * as os from "node:os";
import type { Logger } from "pino";
import { type EngineHome, stateBackend } from "../../engine";
import type { AppDeps } from "../api/deps";
import { leaderForwarder } from "../api/forward";
import { authenticate } from "../http/auth";
import { Gateway } from "../gateway";
import { clusterView } from "../cluster/view";
import { findOperation } from "../../state/operations/operation";
import type { ApiListener } from "./listeners";
import type { ServeOptions } from "./options";
import type { Parts, Readiness } from "./parts";
import { protectedEndpoints } from "./protected-endpoints";
import type { readTokens } from "./tokens";

/**
 * The service's two front doors over its parts: the gateway (when configured) and what the HTTP API
 * reads (AppDeps). Both answer 503 not_ready until `ready` says ok.
 */
export interface FrontInputs {
    opts: ServeOptions;
    parts: Parts;
    api: ApiListener;
    tokens: ReturnType<typeof readTokens>["tokens"];
    log: Logger;
    home: EngineHome;
    version: string;
    startedAt: string;
    ready: () => Readiness;
}

/** The rotating gateway, if `opts.gateway` asks for one; it never relays to the service's own endpoints. */
export function gatewayOf(f: FrontInputs): Gateway | undefined {
    const { opts } = f;
    return (
        opts.gateway &&
        new Gateway({
            ...opts.gateway,
            tls: f.api.tls,
            fleet: f.parts.fleet,
            tokens: f.tokens,
            metrics: f.parts.metrics.gateway,
            log: f.log.child({ component: "gateway" }),
            ready: f.ready,
            protectedTargets: protectedEndpoints(opts.store, stateBackend(f.home, opts.engineEnv), {
                host: opts.host ?? "127.0.0.1",
                port: f.api.port,
            }),
        })
    );
}

/** What the HTTP API (api/app.ts) answers from: every part it reads, and with replicas the cluster's. */
export function appDepsOf(f: FrontInputs, gateway: Gateway | undefined): AppDeps {
    const { opts, parts, log } = f;
    const { scaler, fleet, reconciler, redisStore, providerHealth, cluster, verdicts, scaleQueue } = parts;
    const { desired, journal } = parts;
    return {
        projectRoot: opts.projectRoot,
        stack: opts.stack,
        version: f.version,
        log,
        auth: authenticate(f.tokens),
        scaler,
        ops: parts.ops,
        fleet,
        metrics: parts.metrics,
        providerHealth: () => providerHealth.snapshot(),
        reconcile: () => reconciler.status(),
        autoscaler: parts.autoscaler,
        rotator: parts.rotator,
        timeline: parts.timeline,
        ready: f.ready,
        sseHeartbeatMs: opts.sseHeartbeatMs,
        gateway,
        storeReady: redisStore && (() => redisStore.ready()),
        verdicts: verdicts && (() => verdicts.status()),
        cluster: () =>
            clusterView(cluster, {
                id: `${os.hostname()}-${process.pid}`,
                url: f.api.url,
                version: f.version,
                startedAt: f.startedAt,
            }),
        storedDesired: desired && (async () => (await desired.read())?.counts),
        opEvents: parts.events,
        storedOperation: journal && (async (id) => findOperation(await journal.read(), id)),
        forward: cluster && leaderForwarder(cluster, log.child({ component: "cluster" })),
        scaleQueue: scaleQueue && {
            following: () => !scaler.accepts(),
            enqueue: (pool, replicas) => scaleQueue.enqueue(pool, replicas),
            peek: (id) => scaleQueue.peek(id),
        },
    };
}
