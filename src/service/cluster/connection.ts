import type Redis from "ioredis";
import { openRedis } from "../store/open-redis";

/**
 * A connection of the cluster's parts to the store: a replica's one control connection, which all its
 * store parts share (start/store-session.ts), or one part's own (`PartConnection` with a `url`: the CLI,
 * tests). Connected before use, failing at once while Redis is away (no offline queue, no per-command retries: each part's
 * next tick tries again), reconnecting every 100 ms at most (a leader must renew its lock soon after a
 * Redis restart, cluster.ts; a refused connect to loopback or a LAN costs nothing). Errors are left to the lease
 * store's log line about the outage; a part sees them as failed commands.
 */
export function clusterConnection(url: string, commandTimeoutMs = 1500): Redis {
    const redis = openRedis(url, {
        lazyConnect: true,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        commandTimeout: commandTimeoutMs,
        connectTimeout: 2000,
        // disconnect() keeps a timer this long for a socket that never closes again (one refused at
        // connect): a CLI that found the store down exited 2 s after printing its error.
        disconnectTimeout: 200,
        retryStrategy: (n) => Math.min(50 * 2 ** n, 100),
    });
    redis.on("error", () => undefined);
    return redis;
}

/**
 * Where a part of the cluster (or one of the operation log, fleet or heal parts that live in the store)
 * reaches it: one of the two.
 * - `shared`: a replica's one control connection (start/store-session.ts opens, connects and closes it;
 *   every part of the replica sends its commands on it);
 * - `url`: a connection of the part's own, opened here (an egress command, a test).
 */
export interface StoreAt {
    /** The store's redis:// URL (a secret). */
    url?: string;
    /** The replica's control connection (a clusterConnection); the part never closes it. */
    shared?: Redis;
}

/**
 * A part's way to the store (`StoreAt`): the replica's shared connection, or one of its own. Only a
 * connection of its own is the part's to end; the shared one serves the replica's other parts until the
 * store session closes it. Nothing here is per-connection state: parts define their scripts under
 * names of their own (ioredis' defineCommand), none selects a database or names its client.
 */
export class PartConnection {
    readonly redis: Redis;
    private readonly own: boolean;

    /** `commandTimeoutMs`: for a connection of its own (the shared one's is the session's). */
    constructor(at: StoreAt, commandTimeoutMs?: number) {
        if (at.shared) {
            this.redis = at.shared;
            this.own = false;
        } else if (at.url !== undefined) {
            this.redis = clusterConnection(at.url, commandTimeoutMs);
            this.own = true;
        } else throw new Error("a store part needs `url` or `shared` (the replica's connection)");
    }

    /** Connects a connection not connected yet (first use); one connecting, connected or reconnecting is left as it is. */
    async connect(): Promise<void> {
        if (this.redis.status === "wait") await this.redis.connect().catch(() => undefined);
    }

    /** Ends a connection of its own; the shared one stays open for the replica's other parts. */
    release(): void {
        if (this.own) this.redis.disconnect();
    }
}
