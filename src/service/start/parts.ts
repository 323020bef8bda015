import * as path from "node:path";
import type { Logger } from "pino";
import { loadStackConfig } from "../../config";
import { acquireWriterLock, describeHolder, type EngineHome, FleetDriver, stateBackend } from "../../engine";
import { HealthMonitor } from "../../probes";
import type { ProxyMember } from "../../model";
import { Cluster } from "../cluster/cluster";
import { ClusterVerdicts } from "../cluster/verdicts";
import { homeId } from "../cluster/home";
import { refusingDrift, scopeReader } from "../cluster/scope";
import { ScaleQueue } from "../cluster/scale-queue";
import { StoreDesired } from "../cluster/desired";
import { operationLog } from "../operations/replicated-log";
import { Fleet } from "../fleet/fleet";
import { Timeline, type TimelineSource } from "../fleet/timeline";
import { StoreTimeline } from "../fleet/store-timeline";
import { createMetrics, type Metrics } from "../observe/metrics";
import { ProviderHealth } from "../observe/provider-checks";
import { Drainer } from "../control/drain/drainer";
import { Scaler } from "../control/scaler";
import { Reconciler } from "../control/heal/reconciler";
import { StoreHealHistory } from "../control/heal/store-history";
import { Autoscaler } from "../control/autoscale/autoscaler";
import { Rotator } from "../control/rotate/rotator";
import type { ServeOptions } from "./options";
import { GoneChecks } from "./gone-checks";
import { StoreSession, type ReplicaStore } from "./store-session";

/** Whether the service takes requests now; anything but `ok` is answered 503 not_ready with the reason. */
export type Readiness = { ok: true } | { ok: false; reason: string; stopping?: true };

/** Everything the service is made of, built once, in layer order (see `buildParts`). */
export type Parts = ReturnType<typeof buildParts>;

/** Where the service is reached, and what its probes check through the members. */
export interface PartsAt {
    checkUrl: string;
    checkTls?: { rejectUnauthorized: boolean };
    url: string;
    version: string;
}

/** The stack's pools as its file says now (read again on every call: an operator may edit it). */
type Pools = () => ReturnType<typeof loadStackConfig>["pools"];

/**
 * Builds every part of the service, each from the parts above it in this list, and nothing else: no
 * listener, no timer, no engine call (the caller listens first: the probes' default check URL is the
 * API's own port). The store session decides alone or replica once; a replica's store parts come from
 * it. Calls that go *up* (a probe verdict to the fleet, a settled operation to the reconciler, outcomes
 * to the rotator) are connected afterwards by `subscribeParts`, so no part is used before it exists.
 */
export function buildParts(opts: ServeOptions, log: Logger, home: EngineHome, at: PartsAt) {
    const pools: Pools = () => loadStackConfig(opts.projectRoot, opts.stack).pools;
    const { driver, writerLock, gone } = engineParts(opts, log, home);
    const health = new HealthMonitor({
        intervalMs: opts.probeIntervalMs ?? 10_000,
        checkUrl: at.checkUrl,
        tls: at.checkTls,
    });
    const session = new StoreSession(opts, log, (id) => health.reportLeaseError(id));
    const replica = session.replica && replicaParts(session.replica, opts, log, home, at, health);
    // The operation journal (and event streams): a file of this home for one process; with replicas, the
    // store's, so the next leader takes over what this one recorded from any host.
    const { ops, journal, events } = operationLog({
        journalFile: path.join(home.runDir, `operations-${opts.stack}.json`),
        store: replica && { ...session.replica, self: replica.cluster.id, log: log.child({ component: "cluster" }) },
    });
    // With replicas only the leader probes and decides; every replica shows its verdicts (cluster/verdicts.ts).
    const shown = replica?.verdicts ?? health;
    const fleet = new Fleet(session.leases, shown);
    const metrics = createMetrics({
        pools: () => fleet.poolConfigs().map((p) => ({ name: p.name, desired: p.replicas })),
        poolCounts: () => fleet.poolCounts(),
        members: () =>
            fleet.list().map((m) => ({ id: m.id, pool: m.pool, healthy: shown.get(m.id)?.state === "healthy" })),
    });
    const providerHealth = new ProviderHealth({
        log,
        metrics,
        intervalMs: opts.providerCheckIntervalMs ?? 60_000,
        timeoutMs: opts.providerCheckTimeoutMs ?? 30_000,
    });
    const refreshFleet = fleetRefresher(driver, fleet, pools, log);
    const drainer = drainerOf(fleet, pools, log);
    const cluster = replica?.cluster;
    const scaler = new Scaler({
        driver,
        projectRoot: opts.projectRoot,
        stack: opts.stack,
        ops,
        log,
        // A replica whose stack file drifted from the other homes' applies nothing (home.ts driftReason).
        lock: cluster ? refusingDrift(() => cluster.configDrift(), writerLock) : writerLock,
        drain: { drainer, members: () => fleet.list() },
        fence: cluster && ((signal) => cluster.fence(signal)),
        recordCounts: replica && ((counts, operation) => replica.desired.record(counts, operation)),
        // The rotator's `replaced` is connected by subscribeParts (it is built from this scaler).
        rotation: { refresh: refreshFleet, health: (id) => shown.get(id) },
    });
    const policy = policyParts(
        opts,
        log,
        { scaler, fleet, shown, pools, metrics, providerHealth, gone, driver },
        replica?.healStore,
    );
    const timeline = timelineOf(opts, log, session.replica, replica?.cluster, fleet);
    return {
        session,
        driver,
        writerLock,
        ops,
        journal,
        events,
        health,
        redisStore: session.redisStore,
        leases: session.leases,
        cluster,
        verdicts: replica?.verdicts,
        scaleQueue: replica?.scaleQueue,
        desired: replica?.desired,
        healStore: replica?.healStore,
        fleet,
        metrics,
        providerHealth,
        drainer,
        scaler,
        gone,
        ...policy,
        timeline,
        refreshFleet,
    };
}

/** The engine side: one driver for the stack, its writer lock (shared with CLI writers), the kinds' liveness hooks. */
function engineParts(opts: ServeOptions, log: Logger, home: EngineHome) {
    const driver = new FleetDriver({
        workDir: opts.projectRoot,
        stack: opts.stack,
        home,
        env: opts.engineEnv,
        onNotice: (line) => log.warn({ stack: opts.stack }, line),
    });
    /** The stack's one writer lock (shared with CLI writers); a dead holder's lock is cleared and logged. */
    const writerLock = (signal?: AbortSignal, onWait?: (holder: string) => void) =>
        acquireWriterLock({
            runDir: home.runDir,
            stack: opts.stack,
            command: "egress serve",
            waitMs: opts.writerLockWaitMs ?? 30 * 60_000,
            pollMs: 250,
            signal,
            onWait: (h) => {
                log.warn({ holder: h }, `waiting for the stack's writer lock, held by ${describeHolder(h)}`);
                onWait?.(describeHolder({ ...h, since: undefined })); // the operation records when it began waiting
            },
            onStale: (h) =>
                log.warn(
                    { holder: h },
                    `removed a stale writer lock left by ${describeHolder(h)} (the process is gone)`,
                ),
        });
    const gone = new GoneChecks(driver, home.runDir, opts.stack, log);
    return { driver, writerLock, gone };
}

/**
 * A replica's parts in the store, all on its control connection (store-session.ts). One leads
 * (cluster.ts); until it knows it leads, a replica publishes nothing (two publishers would take each
 * other's members away).
 */
function replicaParts(
    store: ReplicaStore,
    opts: ServeOptions,
    log: Logger,
    home: EngineHome,
    at: PartsAt,
    health: HealthMonitor,
) {
    const clusterLog = log.child({ component: "cluster" });
    const cluster = new Cluster({
        ...store,
        self: { url: opts.advertiseUrl ?? at.url, version: at.version, home: homeId(home.runDir) },
        // Replicas join those of the same scope (one home, or one stack config on a shared backend).
        scope: scopeReader({
            ...opts,
            homeId: homeId(home.runDir),
            backend: stateBackend(home, opts.engineEnv),
        }),
        log: clusterLog,
        ttlMs: opts.leaderTtlMs, // what leading means is subscribed by the start-up (start/leading.ts)
    });
    const mine = { ...store, self: cluster.id, log: clusterLog };
    return {
        cluster,
        // The desired counts outlive the leader and its copy of the stack file (cluster/desired.ts).
        desired: new StoreDesired(mine),
        // Only the leader probes and decides; the rotator hears the outcomes every replica counted (subscribeParts).
        verdicts: new ClusterVerdicts({ ...mine, monitor: health }),
        // A follower queues the scale requests it takes; the leader takes them (cluster/scale-queue.ts).
        scaleQueue: new ScaleQueue(mine),
        // The repair back-off outlives the leader (control/heal/history.ts).
        healStore: new StoreHealHistory(store),
    };
}

/**
 * Re-syncs the fleet with the stack: from `proxies` an update just returned, else from the members
 * state holds (after a failed or interrupted update the stack output still lists the previous run's
 * members; the member components hold what really exists).
 */
function fleetRefresher(driver: FleetDriver, fleet: Fleet, pools: Pools, log: Logger) {
    return async (proxies?: ProxyMember[]): Promise<void> => {
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
        fleet.sync(proxies, pools());
    };
}

function drainerOf(fleet: Fleet, pools: Pools, log: Logger): Drainer {
    return new Drainer({
        fleet,
        log: log.child({ component: "drain" }),
        drainSeconds: (pool) => pools().find((p) => p.name === pool)?.drainSeconds ?? 0,
    });
}

/** The fleet's policies, each driving the one scaler: repair, autoscaling, rotation. */
function policyParts(
    opts: ServeOptions,
    log: Logger,
    p: {
        scaler: Scaler;
        fleet: Fleet;
        shown: Pick<HealthMonitor, "get">;
        pools: Pools;
        metrics: Metrics;
        providerHealth: ProviderHealth;
        gone: GoneChecks;
        driver: FleetDriver;
    },
    healStore?: StoreHealHistory,
) {
    const reconciler = new Reconciler({
        intervalMs: opts.reconcileIntervalMs ?? 60_000,
        log: log.child({ component: "reconcile" }),
        scaler: p.scaler,
        backoff: opts.healBackoff,
        historyStore: healStore,
        members: () => p.fleet.proxies(),
        health: (id) => p.shown.get(id),
        providers: () => p.providerHealth.snapshot(),
        pools: p.pools,
        goneChecks: () => p.gone.checks,
        onRepair: (pool, reason) => p.metrics.heal(pool, reason),
    });
    const autoscaler = new Autoscaler({
        intervalMs: opts.autoscaleIntervalMs ?? 5_000,
        windowMs: opts.autoscaleWindowMs ?? 30_000,
        log: log.child({ component: "autoscale" }),
        scaler: p.scaler,
        pools: p.pools,
        counts: () => p.fleet.poolCounts(),
        onDecision: (pool, direction) => p.metrics.autoscale(pool, direction),
    });
    const rotator = new Rotator({
        intervalMs: opts.rotateIntervalMs ?? 10_000,
        log: log.child({ component: "rotate" }),
        scaler: p.scaler,
        members: () => p.fleet.proxies(),
        health: (id) => p.shown.get(id),
        pools: p.pools,
        createdAt: () => p.driver.memberCreatedAt(),
        onRotate: (pool, reason) => p.metrics.rotation(pool, reason),
        onPoolWideBlock: (pool) => p.metrics.poolWideBlock(pool),
        onReusedIp: (pool) => p.metrics.reusedIp(pool),
    });
    return { reconciler, autoscaler, rotator };
}

/** The dashboard's timeline: this process' samples; with replicas the leader's, in the store (fleet/store-timeline.ts). */
function timelineOf(
    opts: ServeOptions,
    log: Logger,
    store: ReplicaStore | undefined,
    cluster: Cluster | undefined,
    fleet: Fleet,
): TimelineSource {
    const o = { intervalMs: opts.timelineIntervalMs, counts: () => fleet.poolCounts() };
    if (!store || !cluster) return new Timeline(o);
    return new StoreTimeline({
        ...o,
        ...store,
        self: cluster.id,
        leading: () => cluster.isLeader(),
        log: log.child({ component: "cluster" }),
    });
}
