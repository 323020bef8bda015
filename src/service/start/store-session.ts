import type Redis from "ioredis";
import type { Logger } from "pino";
import { LeaseManager } from "../leases";
import { RedisLeaseStore, type LeaseStore, type StoreSpec } from "../store";
import { clusterCommandTimeoutMs } from "../cluster/cluster";
import { clusterConnection } from "../cluster/connection";
import { stackPrefix } from "../cluster/records";
import type { ServeOptions } from "./options";

/** How long the start waits for the store before it goes on without it (the lease store's wait). */
const CONNECT_WAIT_MS = 2000;

/**
 * Whether this service is one of several replicas of its stack, sharing a Redis store and electing a
 * leader (cluster/): the one place that decides it. Alone, the leases live in memory and a second
 * service of the stack is refused (announce.ts).
 */
export function isReplica(store: StoreSpec | undefined): store is Extract<StoreSpec, { kind: "redis" }> {
    return store?.kind === "redis";
}

/** What every part of a replica that lives in the store is built with: the control connection and the stack's prefix. */
export interface ReplicaStore {
    /** The control connection (cluster/connection.ts `StoreAt.shared`). */
    shared: Redis;
    /** `egress:<stack>:`: stacks can share a Redis. */
    prefix: string;
}

/**
 * The service's way to its serving state, opened once (issue 37). Alone: the leases in memory, nothing
 * else. A replica opens two connections to Redis, whatever the number of its parts:
 * - the **serving connection**, the lease store's (store/redis-store.ts): the lease scripts, each grant's
 *   `WAIT` (grant-replicas.ts; it must follow the grant on the same connection, and it holds that
 *   connection until the replicas answer, up to the grant wait), and one socket write per turn;
 * - the **control connection**, shared by every other part (the leader lock, verdicts, scale queue,
 *   journal, event streams, desired counts, repair back-off, timeline): a WAIT on it would hold the
 *   lock's renewals behind a grant's wait, hence two. Neither carries blocking reads, SUBSCRIBE or
 *   per-connection state (no SELECT beyond the URL's database, no CLIENT SETNAME).
 * Both follow Sentinel (`redis+sentinel://`) through open-redis.ts. The session connects both before
 * the parts start and closes them after every part stopped (server.ts walks them in that order).
 */
export class StoreSession {
    readonly leases: LeaseStore;
    /** The lease store in Redis (replicas), for /readyz and the leader's publications. */
    readonly redisStore?: RedisLeaseStore;
    /** Undefined alone; with replicas, what their store parts are built with. */
    readonly replica?: ReplicaStore;

    constructor(
        opts: Pick<ServeOptions, "store" | "stack" | "storeGrantReplicas" | "targetCooldownSeconds" | "leaderTtlMs">,
        log: Logger,
        /** A released lease's `error` outcome. Alone only: with replicas the store counts them for the leader (cluster/verdicts.ts). */
        onLeaseError: (proxyId: string) => void,
    ) {
        const store = opts.store;
        const leaseOptions = { targetCooldownSeconds: opts.targetCooldownSeconds };
        if (!isReplica(store)) {
            this.leases = new LeaseManager({ ...leaseOptions, onError: (id) => onLeaseError(id) });
            return;
        }
        // One prefix per stack, so stacks can share a Redis; the URL itself is a secret (never logged whole).
        const prefix = stackPrefix(opts.stack);
        this.redisStore = new RedisLeaseStore({
            ...leaseOptions,
            url: store.url,
            prefix,
            log: log.child({ component: "store" }),
            grantReplicas: opts.storeGrantReplicas ?? (store.sentinel ? 1 : 0),
        });
        this.leases = this.redisStore;
        // A replica publishes the members only once it leads (start/leading.ts): two publishers would take
        // each other's members away.
        this.redisStore.setPublisher(false);
        // The lock's renewals travel on it: its command timeout is the cluster's (a failed tick is enough).
        this.replica = { shared: clusterConnection(store.url, clusterCommandTimeoutMs(opts.leaderTtlMs)), prefix };
    }

    /** Connects both connections; resolves once they are ready, or after a wait (the service starts not ready then). */
    async connect(log: Logger): Promise<void> {
        const control = this.replica?.shared;
        const controlReady =
            control?.status === "wait"
                ? Promise.race([
                      control.connect().catch(() => undefined),
                      new Promise((r) => setTimeout(r, CONNECT_WAIT_MS).unref()),
                  ])
                : undefined;
        if (this.redisStore && !(await this.redisStore.connect(CONNECT_WAIT_MS)))
            log.warn(
                this.redisStore.ready(),
                "starting without the lease store: leases answer 503 store_unavailable until it is reachable",
            );
        await controlReady;
    }

    /** Closes both (after every part stopped: the parts' own close never ends the shared connection). */
    async close(): Promise<void> {
        await this.redisStore?.close();
        this.replica?.shared.disconnect();
    }
}
