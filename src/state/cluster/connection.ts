import type Redis from "ioredis";
import { openRedis } from "../redis/open-redis";

/**
 * A connection of the cluster's parts (cluster.ts, verdicts.ts, scale-queue.ts) to the store: connected
 * by `start`, failing at once while Redis is away (no offline queue, no per-command retries: each part's
 * next tick tries again), reconnecting every 100 ms at most (a leader must renew its lock soon after a
 * Redis restart, cluster.ts; a refused connect to loopback or a LAN costs nothing). Errors are left to the lease
 * store's log line about the outage; a part sees them as failed commands.
 */
export function clusterConnection(url: string, commandTimeoutMs = 1500, connectionName?: string): Redis {
    const redis = openRedis(url, {
        // CLIENT SETNAME: an operator's CLIENT LIST tells egress' connections apart.
        connectionName,
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
 * A cluster part's connection: the replica's one shared connection (its session's, start/replicated-parts.ts:
 * opened and closed there), or, for a part used alone (a CLI command with --store, a test), its own,
 * which `disconnectOwn` closes (a no-op for the shared one).
 * One connection per replica instead of one per part (issue 37): Redis runs every command in turn
 * anyway, and a part's few commands a second need no socket of their own.
 */
export function partConnection(
    o: { url: string; redis?: Redis },
    commandTimeoutMs?: number,
): { redis: Redis; disconnectOwn: () => void } {
    if (o.redis) return { redis: o.redis, disconnectOwn: () => undefined }; // the session's: its owner closes it
    const redis = clusterConnection(o.url, commandTimeoutMs);
    return { redis, disconnectOwn: () => redis.disconnect() };
}

/**
 * Connects on first use. A shared connection another part is connecting already is waited for (up to
 * its connect timeout) rather than asked again, which ioredis refuses; one connected, or reconnecting
 * after an outage, is used as it is (a command then fails fast, and the part's next round tries again).
 */
export async function connectOnce(redis: Redis): Promise<void> {
    if (redis.status === "wait") return void (await redis.connect().catch(() => undefined));
    if (redis.status !== "connecting" && redis.status !== "connect") return;
    await new Promise<void>((resolve) => {
        const done = () => {
            clearTimeout(timer);
            redis.off("ready", done);
            redis.off("error", done);
            redis.off("end", done);
            resolve();
        };
        const timer = setTimeout(done, 2000).unref();
        redis.once("ready", done);
        redis.once("error", done);
        redis.once("end", done);
    });
}
