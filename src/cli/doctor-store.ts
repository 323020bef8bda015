import type Redis from "ioredis";
import { openRedis } from "../state/redis/open-redis";
import { parseStoreSpec, redactStoreUrl } from "../state/redis/url";
import { CLUSTER_KEYS, describeCommandHolder, heldByCommand, readCluster, stackPrefix } from "../state/cluster/records";
import type { DesiredRecord } from "../state/cluster/desired";
import type { LockFinding } from "./doctor-locks";
import type { ReplicaScope } from "../state/cluster/scope";

/**
 * The lease store `egress serve` would use (`--store`, else $EGRESS_STORE): memory needs nothing; Redis must
 * answer PING within 3 s. The URL is shown with its password masked, and so is any error that quotes it.
 * With Redis, the stack's replicas and leader (src/service/cluster) are reported too.
 */
export async function storeFindings(
    flag: string | undefined,
    stack: string,
    /** The stack file's counts of its scalable pools, when it could be read: compared with the store's. */
    fileCounts?: Record<string, number>,
    /** What a replica started from this home would join as (scope.ts): compared with the stack's. */
    scope?: ReplicaScope,
): Promise<LockFinding[]> {
    const from = flag !== undefined ? "--store" : "EGRESS_STORE";
    const raw = flag ?? process.env.EGRESS_STORE;
    if (raw === undefined || raw.trim() === "") return [];
    let spec;
    try {
        spec = parseStoreSpec(raw, from);
    } catch (e) {
        return [{ check: "store", ok: false, detail: (e as Error).message, fix: `fix ${from}` }];
    }
    if (spec.kind === "memory") return [{ check: "store", ok: true, detail: `memory (${from})` }];
    const shown = redactStoreUrl(spec.url);
    const redis = openRedis(spec.url, {
        lazyConnect: true,
        connectTimeout: 3_000,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
        enableOfflineQueue: false,
    });
    let cause: Error | undefined; // the socket's own error (ECONNREFUSED, …): clearer than "Connection is closed."
    redis.on("error", (e: Error) => (cause ??= e));
    try {
        await redis.connect();
        const pong = await Promise.race([
            redis.ping(),
            new Promise<never>((_r, reject) =>
                setTimeout(() => reject(new Error("no answer to PING within 3 s")), 3_000).unref(),
            ),
        ]);
        return [
            { check: "store", ok: pong === "PONG", detail: `redis ${shown} answers (${from})` },
            await leaderFinding(redis, stack),
            ...(scope ? [await scopeFinding(redis, stack, scope)] : []),
            ...(await desiredFinding(redis, stack, fileCounts)),
        ];
    } catch (e) {
        const why = (cause ?? (e as Error)).message.split(spec.url).join(shown);
        return [
            {
                check: "store",
                ok: false,
                detail: `redis ${shown} does not answer (${from}): ${why}`,
                fix: "start Redis, or fix the URL (host, port, password); `egress serve` answers 503 store_unavailable until it answers",
            },
        ];
    } finally {
        redis.disconnect();
    }
}

/**
 * Whether a replica started from this home would join the stack's running replicas: the same scope as the
 * store's home key (cluster/home.ts), or none held. Says whether the stack can run on several hosts.
 */
async function scopeFinding(redis: Redis, stack: string, scope: ReplicaScope): Promise<LockFinding> {
    const held = await redis.get(`${stackPrefix(stack)}${CLUSTER_KEYS.home}`);
    const where = scope.oneHome
        ? `one EGRESS_HOME on one host, because ${scope.oneHome}`
        : `replicas on several hosts may join with the same stack file (${scope.id})`;
    if (held === null || held === scope.id)
        return { check: "replicas", ok: true, detail: `${where}${held ? "; the running replicas agree" : ""}` };
    return {
        check: "replicas",
        ok: false,
        detail: `${where}; but the stack's replicas run as ${held}: a replica started here is refused`,
        fix: held.startsWith("config:")
            ? "make this home's stack file the same as theirs (all but the pools' replicas), with the same backend"
            : "run replicas of this stack from the home that holds it, or stop those first",
    };
}

/** Who leads the stack's replicas, from the leader lock and the heartbeat records (informational). */
async function leaderFinding(redis: Redis, stack: string): Promise<LockFinding> {
    const { leader: l, replicas: fresh } = await readCluster(redis, stackPrefix(stack), 10_000);
    if (!l)
        return {
            check: "leader",
            ok: true,
            detail: fresh.length
                ? `no replica of stack ${stack} holds the leader lock right now (${fresh.length} alive; an election takes a few seconds)`
                : `no egress serve of stack ${stack} runs on this store`,
        };
    if (heldByCommand(l))
        return {
            check: "leader",
            ok: true,
            detail: `${describeCommandHolder(l)} on ${l.host ?? "?"} holds stack ${stack}'s lock in the store (fencing token ${l.token}): no replica leads until it ends; ${fresh.length} replica(s) alive`,
        };
    const at = fresh.find((r) => r.id === l.id);
    return {
        check: "leader",
        ok: true,
        detail: `${l.id}${at ? ` (${at.url})` : ""} leads stack ${stack} since ${l.since}, fencing token ${l.token}; ${fresh.length} replica(s) alive`,
    };
}

/**
 * The desired counts the store keeps for the stack (src/state/cluster/desired.ts) beside the stack file's
 * (informational): where they differ, the next leader or `egress up --store` applies the store's.
 */
async function desiredFinding(
    redis: Redis,
    stack: string,
    file: Record<string, number> | undefined,
): Promise<LockFinding[]> {
    const raw = await redis.get(stackPrefix(stack) + CLUSTER_KEYS.desired);
    if (raw === null) return [];
    let rec: DesiredRecord;
    try {
        rec = JSON.parse(raw) as DesiredRecord;
    } catch {
        return [
            {
                check: "desired counts",
                ok: false,
                detail: "the store's desired counts are not JSON",
                fix: "`egress scale` writes them again",
            },
        ];
    }
    const counts =
        Object.entries(rec.counts ?? {})
            .map(([pool, n]) => `${pool} ${n}`)
            .join(", ") || "none";
    const differ = Object.entries(rec.counts ?? {}).filter(
        ([pool, n]) => file && file[pool] !== undefined && file[pool] !== n,
    );
    const by = `written by ${rec.by} at ${rec.at}`;
    return [
        {
            check: "desired counts",
            ok: true,
            detail: differ.length
                ? `the store's: ${counts} (${by}); the stack file says ${differ.map(([pool]) => `${pool} ${file![pool]}`).join(", ")}: the next leader, or \`egress up --store\`, applies the store's`
                : `the store's: ${counts} (${by}); the stack file agrees`,
        },
    ];
}
