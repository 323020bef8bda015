import Redis, { type RedisOptions } from "ioredis";
import { isSentinelUrl, parseSentinelUrl } from "./sentinel-url";

/**
 * The one way egress opens a connection to its store (lease store, cluster parts, CLI lock, doctor):
 * a plain `redis://` / `rediss://` URL as ioredis reads it, or a `redis+sentinel://` one through ioredis'
 * own Sentinel support, which asks the sentinels for the primary of `name`, checks the node it reaches
 * is a primary (`role: master`) and asks again on every reconnect: a failover looks like a Redis restart
 * to the caller (Sentinel closes the demoted primary's connections). `opts` are the caller's bad-day policy (timeouts, offline queue, retries), applied to
 * the sentinel side too. The URL was checked by parseStoreSpec; a bad one throws here.
 */
export function openRedis(url: string, opts: RedisOptions): Redis {
    return isSentinelUrl(url) ? new Redis(sentinelOptions(url, opts)) : new Redis(url, opts);
}

export function sentinelOptions(url: string, opts: RedisOptions): RedisOptions {
    const r = parseSentinelUrl(url.trim());
    if ("issues" in r) throw new Error(`not a sentinel store URL: ${r.issues.join(", ")}`);
    const s = r.spec;
    const retry = opts.retryStrategy;
    return {
        ...opts,
        sentinels: s.sentinels,
        name: s.name,
        role: "master",
        db: s.db,
        username: s.username,
        password: s.password,
        // One credential for the nodes and the sentinels (docs/operations.md): sentinels guarding a
        // password-protected primary should have one too (`requirepass` in sentinel.conf), and a second
        // secret in the URL would have no standard place.
        sentinelUsername: s.username,
        sentinelPassword: s.password,
        // When every sentinel is unreachable: the caller's policy (doctor gives up at once, serve retries).
        sentinelRetryStrategy: retry ? (n: number) => retry(n) ?? null : retry === null ? () => null : undefined,
        // The caller's connect timeout bounds each sentinel asked, so one dead sentinel costs no more.
        sentinelCommandTimeout: opts.commandTimeout ?? opts.connectTimeout,
        // No failoverDetector: Sentinel itself ends the demoted primary's clients (CLIENT KILL TYPE normal
        // as it reconfigures it), and the detector's sentinel connections have no error listener, so a
        // sentinel going away would print a non-JSON "[ioredis] Unhandled error event" line.
        ...(s.tls ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
    };
}
