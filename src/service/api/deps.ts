/**
 * What the HTTP layer is given (AppDeps): types only, so app.ts and the routes it mounts both import it
 * and neither imports the other back.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import type { Scope } from "../http/auth";
import type { RequestHandler } from "express";
import type { Scaler } from "../control/scaler";
import type { OperationLog } from "../../state/operations/journal";
import type { Fleet } from "../fleet/fleet";
import type { Metrics } from "../observe/metrics";
import type { ProviderHealthReport } from "../observe/provider-checks";
import type { ReconcileStatus } from "../control/heal/reconciler";
import type { Autoscaler } from "../control/autoscale/autoscaler";
import type { Rotator } from "../control/rotate/rotator";
import type { TimelineSource } from "../fleet/timeline";
import type { Gateway } from "../gateway";
import type { z } from "zod";
import type { clusterResponse } from "./schemas";
import type { VerdictsStatus } from "../cluster/verdicts";
import type { ScaleQueue } from "../../state/cluster/scale-queue";
import type { StoreEvents } from "../../state/operations/store-events";
import type { Operation } from "../../state/operations/operation";

/** Everything the HTTP layer needs, built by src/service/start/server.ts (or by tests with synthetic parts). */
export interface AppDeps {
    projectRoot: string;
    stack: string;
    version: string;
    log: Logger;
    /** No scope: any valid token. */
    auth: (scope?: Scope) => RequestHandler;
    scaler: Scaler;
    ops: OperationLog;
    fleet: Fleet;
    metrics: Metrics;
    providerHealth: () => ProviderHealthReport[];
    /** GET /v1/heal. */
    reconcile: () => ReconcileStatus;
    /** GET /v1/pools shows each autoscaled pool's signals and last decision (absent in tests without one). */
    autoscaler?: Pick<Autoscaler, "view">;
    /** GET /v1/pools shows each rotated pool's next deadline and last rotation (absent in tests without one). */
    rotator?: Pick<Rotator, "view">;
    /** GET /v1/timeline: this process' ring, or with replicas the leader's samples in the store. */
    timeline: TimelineSource;
    /** `stopping`: the service is shutting down; every request but liveness and metrics is answered 503 not_ready. */
    ready: () => { ok: true } | { ok: false; reason: string; stopping?: boolean };
    /** Time between `: ping` comments on operation event streams. @default 15000 (routes/operation-events.ts) */
    sseHeartbeatMs?: number;
    /** Whether the lease store is reachable (a Redis store; the memory one always is): /readyz is false while it is not. */
    storeReady?: () => { ok: true } | { ok: false; reason: string };
    /** With replicas: whose health verdicts this replica shows (GET /v1/proxies `verdicts`); absent alone. */
    verdicts?: () => VerdictsStatus;
    /** GET /v1/cluster: the replicas and the leader (one replica, leading, with the memory store). */
    cluster: () => Promise<z.infer<typeof clusterResponse>>;
    /**
     * On a follower, hands a leader-only request (scale, operations, heal) to the leader and returns
     * true; false when this replica answers it itself (api/forward.ts).
     */
    forward?: (req: IncomingMessage, res: ServerResponse) => boolean;
    /**
     * With replicas: a follower queues the scale requests it takes for the leader (src/state/cluster/scale-queue.ts)
     * instead of forwarding them, so they are accepted while no replica leads; the leader answers for a
     * request it has not taken yet.
     */
    scaleQueue?: Pick<ScaleQueue, "enqueue" | "peek"> & { following: () => boolean };
    /**
     * With replicas: the desired counts in the store (src/state/cluster/desired.ts). A follower's GET /v1/pools shows
     * them, since its own stack file may be another host's copy that the leader does not write.
     */
    storedDesired?: () => Promise<Record<string, number> | undefined>;
    /**
     * With replicas: the operations' event streams in the store (src/state/operations/store-events.ts), which every
     * replica's GET /v1/operations/:id/events reads, and the store's journal, for operations this
     * replica did not run (found by id or by a folded request's id).
     */
    opEvents?: Pick<StoreEvents, "read" | "last">;
    storedOperation?: (id: string) => Promise<Operation | undefined>;
    /** How often such a stream reads the store. @default 250 (routes/operation-events.ts) */
    ssePollMs?: number;
    /** The rotating gateway, when it runs (POST /v1/blocks asks it which member served a request). */
    gateway?: Gateway;
}
