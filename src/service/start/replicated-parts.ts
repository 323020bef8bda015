import * as path from "node:path";
import type { Logger } from "pino";
import { type EngineHome, stateBackend } from "../../engine";
import type { HealthMonitor } from "../../probes";
import { LeaseManager } from "../leases";
import { RedisLeaseStore, type LeaseStore, type StoreSpec } from "../store";
import type Redis from "ioredis";
import { Cluster } from "../cluster/cluster";
import { clusterConnection } from "../../state/cluster/connection";
import { LEADER_TTL_MS, stackPrefix } from "../../state/cluster/records";
import { ClusterVerdicts } from "../cluster/verdicts";
import { homeId } from "../cluster/home";
import { scopeReader } from "../../state/cluster/scope";
import { ScaleQueue } from "../../state/cluster/scale-queue";
import { StoreDesired } from "../../state/cluster/desired";
import { operationLog } from "../operations/replicated-log";
import { StoreHealHistory } from "../control/heal/store-history";
import type { ServeOptions } from "./options";

/** The Redis store a service shares with its replicas, or undefined: the one place that decides "replicated or not". */
export type SharedStore = Extract<StoreSpec, { kind: "redis" }> | undefined;

export function sharedStoreOf(opts: ServeOptions): SharedStore {
    return opts.store?.kind === "redis" ? opts.store : undefined;
}

/** Where a replica's shared state lives in Redis, and who writes it: what every Redis-backed part is given. */
export interface ReplicaSession {
    url: string;
    /** One prefix per stack, so stacks can share a Redis. */
    prefix: string;
    /** This replica's id (cluster/). */
    self: string;
    log: Logger;
    /**
     * The replica's one connection for every Redis-backed part but the lease store (which keeps its own
     * for the serving path): opened here, connected by the first part that needs it, closed by the stop.
     */
    redis: Redis;
}

/**
 * The lease store: in this process's memory, or in the shared Redis store (every replica's leases in one
 * place). `health` hears of lease errors when nothing else counts them.
 */
export function leaseStoreOf(opts: ServeOptions, shared: SharedStore, log: Logger, health: HealthMonitor) {
    const leaseOptions = {
        // With replicas, lease errors reach the deciding monitor through the store's counters (the
        // leader's ClusterVerdicts), wherever the lease was released; counted here too, the leader's
        // own releases would count twice.
        onError: (proxyId: string) => {
            if (!shared) health.reportLeaseError(proxyId);
        },
        targetCooldownSeconds: opts.targetCooldownSeconds,
    };
    // The URL itself is a secret (never logged whole).
    const redisStore =
        shared &&
        new RedisLeaseStore({
            ...leaseOptions,
            url: shared.url,
            prefix: stackPrefix(opts.stack),
            log: log.child({ component: "store" }),
            grantReplicas: opts.storeGrantReplicas ?? (shared.sentinel ? 1 : 0),
        });
    const leases: LeaseStore = redisStore ?? new LeaseManager({ ...leaseOptions, now: opts.leaseClock });
    return { redisStore, leases };
}

/**
 * What replicas share beside the leases, each undefined for a service alone: the cluster (one leader),
 * the operation journal and event streams (alone: a file of this home), the desired counts, the leader's
 * verdicts, the followers' scale queue and the repair back-off, all in the shared store so they outlive
 * the leader. `onOutcomes`: every replica's lease outcomes, as the store counts them (the rotator's).
 */
export function replicatedParts(
    opts: ServeOptions,
    shared: SharedStore,
    log: Logger,
    home: EngineHome,
    at: { url: string; version: string },
    o: {
        health: HealthMonitor;
        redisStore?: RedisLeaseStore;
        onOutcomes: (member: string, blocked: number, total: number) => void;
    },
) {
    const { runDir } = home;
    // The leader lock's renewals give up within a third of its TTL: a failed tick is enough.
    const redis =
        shared &&
        clusterConnection(shared.url, Math.min(1500, (opts.leaderTtlMs ?? LEADER_TTL_MS) / 3), "egress-cluster");
    const cluster =
        shared &&
        new Cluster({
            redis,
            url: shared.url,
            prefix: stackPrefix(opts.stack),
            self: { url: opts.advertiseUrl ?? at.url, version: at.version, home: homeId(runDir) },
            // Replicas join those of the same scope (one home, or one stack config on a shared backend).
            scope: scopeReader({ ...opts, homeId: homeId(runDir), backend: stateBackend(home, opts.engineEnv) }),
            log: log.child({ component: "cluster" }),
            ttlMs: opts.leaderTtlMs, // what leading means is subscribed by the start-up (start/leading.ts)
        });
    // Until it knows it leads, a replica publishes nothing (two publishers would take each other's members away).
    if (cluster) o.redisStore?.setPublisher(false);
    const session: ReplicaSession | undefined = cluster &&
        redis && {
            redis,
            url: shared.url,
            prefix: stackPrefix(opts.stack),
            self: cluster.id,
            log: log.child({ component: "cluster" }),
        };
    const { ops, journal, events } = operationLog({
        journalFile: path.join(runDir, `operations-${opts.stack}.json`),
        store: session,
    });
    return {
        cluster,
        session,
        ops,
        journal,
        events,
        desired: session && new StoreDesired(session),
        verdicts: session && new ClusterVerdicts({ ...session, monitor: o.health, onOutcomes: o.onOutcomes }),
        scaleQueue: session && new ScaleQueue(session),
        healStore: session && new StoreHealHistory({ url: session.url, prefix: session.prefix, redis: session.redis }),
    };
}
