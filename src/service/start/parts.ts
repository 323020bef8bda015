import type { Logger } from "pino";
import { loadStackConfig } from "../../config";
import { acquireWriterLock, describeHolder, type EngineHome, FleetDriver } from "../../engine";
import { HealthMonitor } from "../../probes";
import type { ProxyMember } from "../../model";
import type { Cluster } from "../cluster/cluster";
import type { ClusterVerdicts } from "../cluster/verdicts";
import type { StoreDesired } from "../../state/cluster/desired";
import type { OperationLog } from "../../state/operations/journal";
import { Fleet } from "../fleet/fleet";
import { Timeline, type TimelineSource } from "../fleet/timeline";
import { StoreTimeline } from "../fleet/store-timeline";
import { createMetrics } from "../observe/metrics";
import { ProviderHealth } from "../observe/provider-checks";
import { Drainer } from "../control/drain/drainer";
import { Scaler } from "../control/scaler";
import { Reconciler } from "../control/heal/reconciler";
import type { StoreHealHistory } from "../control/heal/store-history";
import { Autoscaler } from "../control/autoscale/autoscaler";
import { Rotator } from "../control/rotate/rotator";
import { refusingDrift } from "../../state/cluster/scope";
import type { ServeOptions } from "./options";
import { GoneChecks } from "./gone-checks";
import { leaseStoreOf, replicatedParts, type ReplicaSession, sharedStoreOf } from "./replicated-parts";

/** Whether the service takes requests now; anything but `ok` is answered 503 not_ready with the reason. */
export type Readiness = { ok: true } | { ok: false; reason: string; stopping?: true };

/** Everything the service is made of, built once, in layer order (see `buildParts`). */
export type Parts = ReturnType<typeof buildParts>;

/**
 * Builds every part of the service, each from the parts below it, and nothing else: no listener, no
 * timer, no engine call (the caller listens first: the probes' default check URL is the API's own port).
 * Read top to bottom: the engine, the probes, the lease store and what replicas share, the fleet, its
 * metrics, the control loops, the timeline. Parts that must call *up* (a probe verdict goes to the
 * fleet, a settled operation to the reconciler) are connected afterwards by `subscribeParts`, so no
 * part is ever used before it exists.
 */
export function buildParts(
    opts: ServeOptions,
    log: Logger,
    home: EngineHome,
    at: { checkUrl: string; checkTls?: { rejectUnauthorized: boolean }; url: string; version: string },
) {
    const shared = sharedStoreOf(opts);
    const { driver, writerLock, pools } = engineParts(opts, log, home);
    const health = new HealthMonitor({
        intervalMs: opts.probeIntervalMs ?? 10_000,
        checkUrl: at.checkUrl,
        tls: at.checkTls,
    });
    const { redisStore, leases } = leaseStoreOf(opts, shared, log, health);
    // The rotator is a control part, built below the verdicts that count every replica's outcomes for it;
    // the store's counts reach it only once the service runs.
    const late: { rotator?: Rotator } = {};
    const replicated = replicatedParts(opts, shared, log, home, at, {
        health,
        redisStore,
        onOutcomes: (member, blocked, total) => late.rotator?.outcomesCounted(member, blocked, total),
    });
    const { cluster, verdicts } = replicated;
    const shown = verdicts ?? health;
    const fleet = new Fleet(leases, shown);
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
    const { ops, desired, healStore } = replicated;
    const control = controlParts(opts, log, home.runDir, {
        driver,
        writerLock,
        pools,
        fleet,
        shown,
        metrics,
        providerHealth,
        refreshFleet,
        cluster,
        ops,
        desired,
        healStore,
    });
    late.rotator = control.rotator;
    const timeline = timelineOf(opts, fleet, cluster, replicated.session);
    return {
        driver,
        writerLock,
        health,
        redisStore,
        leases,
        ...replicated,
        fleet,
        metrics,
        providerHealth,
        ...control,
        timeline,
        refreshFleet,
    };
}

/** The engine's side: the stack's driver, its one writer lock (shared with CLI writers), its pools as configured now. */
function engineParts(opts: ServeOptions, log: Logger, home: EngineHome) {
    const pools = () => loadStackConfig(opts.projectRoot, opts.stack).pools;
    const driver = new FleetDriver({
        workDir: opts.projectRoot,
        stack: opts.stack,
        home,
        env: opts.engineEnv,
        onNotice: (line) => log.warn({ stack: opts.stack }, line),
    });
    /** A dead holder's lock is cleared and logged. */
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
    return { driver, writerLock, pools };
}

/** What the control loops are built from: the engine's parts, the fleet's, and what replicas share. */
interface ControlInputs {
    driver: FleetDriver;
    writerLock: ReturnType<typeof engineParts>["writerLock"];
    pools: ReturnType<typeof engineParts>["pools"];
    fleet: Fleet;
    /** The verdicts this replica shows: its own probes', or with replicas the leader's. */
    shown: HealthMonitor | ClusterVerdicts;
    metrics: ReturnType<typeof createMetrics>;
    providerHealth: ProviderHealth;
    refreshFleet: (proxies?: ProxyMember[]) => Promise<void>;
    cluster?: Cluster;
    ops: OperationLog;
    desired?: StoreDesired;
    healStore?: StoreHealHistory;
}

/** The drainer, the scaler (every engine operation) and the loops that ask it for operations. */
function controlParts(opts: ServeOptions, log: Logger, runDir: string, c: ControlInputs) {
    const { driver, fleet, shown, metrics, pools, cluster, desired } = c;
    const drainer = new Drainer({
        fleet,
        log: log.child({ component: "drain" }),
        drainSeconds: (pool) => pools().find((p) => p.name === pool)?.drainSeconds ?? 0,
    });
    const scaler = new Scaler({
        driver,
        projectRoot: opts.projectRoot,
        stack: opts.stack,
        ops: c.ops,
        log,
        // A replica whose stack file drifted from the other homes' applies nothing (home.ts driftReason).
        lock: cluster ? refusingDrift(() => cluster.configDrift(), c.writerLock) : c.writerLock,
        drain: { drainer, members: () => fleet.list() },
        fence: cluster && ((signal) => cluster.fence(signal)),
        recordCounts: desired && ((counts, operation) => desired.record(counts, operation)),
        // Called only inside an operation, long after the rotator below exists.
        rotation: {
            refresh: c.refreshFleet,
            health: (id) => shown.get(id),
            replaced: (r): boolean => rotator.replaced(r),
        },
    });
    const gone = new GoneChecks(driver, runDir, opts.stack, log);
    const reconciler = new Reconciler({
        intervalMs: opts.reconcileIntervalMs ?? 60_000,
        log: log.child({ component: "reconcile" }),
        scaler,
        backoff: opts.healBackoff,
        // With replicas the repair back-off outlives the leader (control/heal/history.ts).
        historyStore: c.healStore,
        members: () => fleet.proxies(),
        health: (id) => shown.get(id),
        providers: () => c.providerHealth.snapshot(),
        pools,
        goneChecks: () => gone.checks,
        onRepair: (pool, reason) => metrics.heal(pool, reason),
    });
    const autoscaler = new Autoscaler({
        intervalMs: opts.autoscaleIntervalMs ?? 5_000,
        windowMs: opts.autoscaleWindowMs ?? 30_000,
        log: log.child({ component: "autoscale" }),
        scaler,
        pools,
        counts: () => fleet.poolCounts(),
        onDecision: (pool, direction) => metrics.autoscale(pool, direction),
    });
    const rotator: Rotator = new Rotator({
        intervalMs: opts.rotateIntervalMs ?? 10_000,
        log: log.child({ component: "rotate" }),
        scaler,
        members: () => fleet.proxies(),
        health: (id) => shown.get(id),
        pools,
        createdAt: () => driver.memberCreatedAt(),
        onRotate: (pool, reason) => metrics.rotation(pool, reason),
        onPoolWideBlock: (pool) => metrics.poolWideBlock(pool),
        onReusedIp: (pool) => metrics.reusedIp(pool),
    });
    return { drainer, scaler, gone, reconciler, autoscaler, rotator };
}

/** The pool counts over time: sampled here, or with replicas by the leader into the store, read by every replica there. */
function timelineOf(
    opts: ServeOptions,
    fleet: Fleet,
    cluster: Cluster | undefined,
    session: ReplicaSession | undefined,
): TimelineSource {
    const timelineOptions = { intervalMs: opts.timelineIntervalMs, counts: () => fleet.poolCounts() };
    if (!cluster || !session) return new Timeline(timelineOptions);
    return new StoreTimeline({ ...timelineOptions, ...session, leading: () => cluster.isLeader() });
}

/**
 * Re-syncs the fleet with the stack: from `proxies` an update just returned, else from the members
 * state holds (after a failed or interrupted update the stack output still lists the previous run's
 * members; the member components hold what really exists).
 */
function fleetRefresher(
    driver: FleetDriver,
    fleet: Fleet,
    pools: ReturnType<typeof engineParts>["pools"],
    log: Logger,
) {
    return async (proxies?: ProxyMember[]) => {
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
