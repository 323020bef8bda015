import type Redis from "ioredis";
import { openRedis } from "../store/open-redis";

/**
 * A connection of the cluster's parts (cluster.ts, verdicts.ts, scale-queue.ts) to the store: connected
 * by `start`, failing at once while Redis is away (no offline queue, no per-command retries: each part's
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
