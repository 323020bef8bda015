import * as path from "node:path";
import type { Logger } from "pino";
import { loadStackConfig } from "../../config";
import { acquireWriterLock, describeHolder, type EngineHome, FleetDriver, stateBackend } from "../../engine";
import { HealthMonitor } from "../../probes";
import type { ProxyMember } from "../../model";
import { LeaseManager } from "../leases";
import { RedisLeaseStore, type LeaseStore } from "../store";
import { Cluster } from "../cluster/cluster";
import { stackPrefix } from "../cluster/records";
import { ClusterVerdicts } from "../cluster/verdicts";
import { homeId } from "../cluster/home";
import { refusingDrift, scopeReader } from "../cluster/scope";
import { ScaleQueue } from "../cluster/scale-queue";
import { StoreDesired } from "../cluster/desired";
import { operationLog } from "../operations/replicated-log";
import { Fleet } from "../fleet/fleet";
import { Timeline, type TimelineSource } from "../fleet/timeline";
import { StoreTimeline } from "../fleet/store-timeline";
import { createMetrics } from "../observe/metrics";
import { ProviderHealth } from "../observe/provider-checks";
import { Drainer } from "../control/drain/drainer";
import { Scaler } from "../control/scaler";
import { Reconciler } from "../control/heal/reconciler";
import { StoreHealHistory } from "../control/heal/store-history";
import { Autoscaler } from "../control/autoscale/autoscaler";
import { Rotator } from "../control/rotate/rotator";
import type { ServeOptions } from "./options";
import { GoneChecks } from "./gone-checks";

/** Whether the service takes requests now; anything but `ok` is answered 503 not_ready with the reason. */
export type Readiness = { ok: true } | { ok: false; reason: string; stopping?: true };

/** Everything the service is made of, built once, in layer order (see `buildParts`). */
export type Parts = ReturnType<typeof buildParts>;

/**
 * Builds every part of the service, each from the parts below it, and nothing else: no listener, no
 * timer, no engine call (the caller listens first: the probes' default check URL is the API's own port). Parts that must call *up* (a probe verdict goes to the fleet, a settled
 * operation to the reconciler) are connected afterwards by `subscribeParts`, so no part is ever used
 * before it exists.
 */
export function buildParts(
    opts: ServeOptions,
    log: Logger,
    home: EngineHome,
    at: { checkUrl: string; checkTls?: { rejectUnauthorized: boolean }; url: string; version: string },
) {
    const { checkUrl } = at;
    const { runDir } = home;
    const pools = () => loadStackConfig(opts.projectRoot, opts.stack).pools;
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
            runDir,
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
    const health = new HealthMonitor({ intervalMs: opts.probeIntervalMs ?? 10_000, checkUrl, tls: at.checkTls });
    const leaseOptions = {
        // With replicas, lease errors reach the deciding monitor through the store's counters (the
        // leader's ClusterVerdicts), wherever the lease was released; counted here too, the leader's
        // own releases would count twice.
        onError: (proxyId: string) => {
            if (opts.store?.kind !== "redis") health.reportLeaseError(proxyId);
        },
        targetCooldownSeconds: opts.targetCooldownSeconds,
    };
    // One prefix per stack, so stacks can share a Redis; the URL itself is a secret (never logged whole).
    const redisStore =
        opts.store?.kind === "redis"
            ? new RedisLeaseStore({
                  ...leaseOptions,
                  url: opts.store.url,
                  prefix: stackPrefix(opts.stack),
                  log: log.child({ component: "store" }),
                  grantReplicas: opts.storeGrantReplicas ?? (opts.store.sentinel ? 1 : 0),
              })
            : undefined;
    const leases: LeaseStore = redisStore ?? new LeaseManager(leaseOptions);
    // Several replicas share a Redis store: one leads (cluster/). Until it knows it leads, a replica
    // publishes nothing (two publishers would take each other's members away).
    const cluster =
        opts.store?.kind === "redis"
            ? new Cluster({
                  url: opts.store.url,
                  prefix: stackPrefix(opts.stack),
                  self: { url: opts.advertiseUrl ?? at.url, version: at.version, home: homeId(runDir) },
                  // Replicas join those of the same scope (one home, or one stack config on a shared backend).
                  scope: scopeReader({ ...opts, homeId: homeId(runDir), backend: stateBackend(home, opts.engineEnv) }),
                  log: log.child({ component: "cluster" }),
                  ttlMs: opts.leaderTtlMs, // what leading means is subscribed by the start-up (start/leading.ts)
              })
            : undefined;
    if (cluster) redisStore?.setPublisher(false);
    // The operation journal (and event streams): a file of this home for one process; with replicas, the
    // store's, so the next leader takes over what this one recorded from any host.
    const { ops, journal, events } = operationLog({
        journalFile: path.join(runDir, `operations-${opts.stack}.json`),
        store:
            cluster && opts.store?.kind === "redis"
                ? {
                      url: opts.store.url,
                      prefix: stackPrefix(opts.stack),
                      self: cluster.id,
                      log: log.child({ component: "cluster" }),
                  }
                : undefined,
    });
    // With replicas the desired counts outlive the leader and its copy of the stack file (cluster/desired.ts).
    const desired =
        cluster && opts.store?.kind === "redis"
            ? new StoreDesired({
                  url: opts.store.url,
                  prefix: stackPrefix(opts.stack),
                  self: cluster.id,
                  log: log.child({ component: "cluster" }),
              })
            : undefined;
    // With replicas only the leader probes and decides; every replica shows its verdicts (cluster/verdicts.ts).
    const verdicts =
        cluster && opts.store?.kind === "redis"
            ? new ClusterVerdicts({
                  url: opts.store.url,
                  prefix: stackPrefix(opts.stack),
                  self: cluster.id,
                  monitor: health,
                  log: log.child({ component: "cluster" }),
                  // With replicas the store counts every replica's outcomes; the leader's rotator reads them here.
                  onOutcomes: (member: string, blocked: number, total: number) =>
                      rotator.outcomesCounted(member, blocked, total),
              })
            : undefined;
    // A follower queues the scale requests it takes; the leader takes them (cluster/scale-queue.ts).
    const scaleQueue =
        cluster && opts.store?.kind === "redis"
            ? new ScaleQueue({
                  url: opts.store.url,
                  prefix: stackPrefix(opts.stack),
                  self: cluster.id,
                  log: log.child({ component: "cluster" }),
              })
            : undefined;
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
    const drainer = new Drainer({
        fleet,
        log: log.child({ component: "drain" }),
        drainSeconds: (pool) => pools().find((p) => p.name === pool)?.drainSeconds ?? 0,
    });
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
        recordCounts: desired && ((counts, operation) => desired.record(counts, operation)),
        // Called only inside an operation, long after refreshFleet below exists.
        rotation: {
            refresh: (proxies) => refreshFleet(proxies),
            health: (id) => shown.get(id),
            replaced: (r): boolean => rotator.replaced(r),
        },
    });
    const gone = new GoneChecks(driver, runDir, opts.stack, log);
    // With replicas the repair back-off outlives the leader (control/heal/history.ts).
    const healStore =
        cluster && opts.store?.kind === "redis"
            ? new StoreHealHistory({ url: opts.store.url, prefix: stackPrefix(opts.stack) })
            : undefined;
    const reconciler = new Reconciler({
        intervalMs: opts.reconcileIntervalMs ?? 60_000,
        log: log.child({ component: "reconcile" }),
        scaler,
        backoff: opts.healBackoff,
        historyStore: healStore,
        members: () => fleet.proxies(),
        health: (id) => shown.get(id),
        providers: () => providerHealth.snapshot(),
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
    const rotator = new Rotator({
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
    // With replicas the leader samples into the store and every replica reads it there (fleet/store-timeline.ts).
    const timelineOptions = { intervalMs: opts.timelineIntervalMs, counts: () => fleet.poolCounts() };
    const timeline: TimelineSource =
        cluster && opts.store?.kind === "redis"
            ? new StoreTimeline({
                  ...timelineOptions,
                  url: opts.store.url,
                  prefix: stackPrefix(opts.stack),
                  self: cluster.id,
                  leading: () => cluster.isLeader(),
                  log: log.child({ component: "cluster" }),
              })
            : new Timeline(timelineOptions);

    /**
     * Re-syncs the fleet with the stack: from `proxies` an update just returned, else from the members
     * state holds (after a failed or interrupted update the stack output still lists the previous run's
     * members; the member components hold what really exists).
     */
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
        fleet.sync(proxies, pools());
    };
    return {
        driver,
        writerLock,
        ops,
        journal,
        events,
        desired,
        health,
        redisStore,
        leases,
        cluster,
        verdicts,
        scaleQueue,
        fleet,
        metrics,
        providerHealth,
        drainer,
        scaler,
        gone,
        reconciler,
        healStore,
        autoscaler,
        rotator,
        timeline,
        refreshFleet,
    };
}
