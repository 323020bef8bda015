/**
 * A stack's cluster records in the store: the keys under its prefix, the replica and leader records and
 * the one reader of them. Separate from cluster.ts (the live replica's heartbeat and claim loop) because
 * `egress doctor`, the CLI's lock and the other cluster parts read or address these records without a
 * Cluster of their own.
 */
import type Redis from "ioredis";

/** The key prefix of a stack in the store: its leases (store/), its leader and replicas (here). */
export const stackPrefix = (stack: string) => `egress:${stack}:`;
/**
 * Under the prefix: the leader lock, the fencing counter, the replicas' heartbeat records, and the
 * leader's health verdicts (verdicts.ts), which every replica shows, the scale requests followers
 * queued for the leader (scale-queue.ts), the id of the EGRESS_HOME whose replicas hold the stack
 * (Cluster.assertOneHome), the leader's timeline samples (fleet/store-timeline.ts), its repair
 * back-off per member (control/heal/store-history.ts), the operation journal
 * (operations/store-journal.ts) and the desired counts (desired.ts).
 */
export const CLUSTER_KEYS = {
    leader: "leader",
    fence: "fence",
    replicas: "replicas",
    health: "health",
    scaleRequests: "scale-requests",
    home: "home",
    timeline: "timeline",
    heal: "heal",
    journal: "journal",
    desired: "desired",
    /** A prefix: `events:<operation id>`, one stream per operation (operations/store-events.ts). */
    events: "events:",
} as const;

/** One replica as the cluster sees it (GET /v1/cluster). */
export interface ReplicaInfo {
    id: string;
    /** Where its API answers (`--advertise-url`, else its own listen URL): followers forward control requests here. */
    url: string;
    gatewayUrl?: string;
    version: string;
    pid: number;
    host: string;
    startedAt: string;
    /** This replica's clock, when it last wrote its record. */
    lastHeartbeat: string;
    /** The id of the EGRESS_HOME it runs from (home.ts); absent in records of older releases. */
    home?: string;
    /**
     * What replicas of the stack must share to join (scope.ts): its home id when the stack is one host's,
     * `config:<hash>` of its stack file when the stack is on a shared backend; absent in older records.
     */
    scope?: string;
}

/** The scope a replica's record names (older releases wrote `home` only). */
export const scopeOf = (r: ReplicaInfo): string | undefined => r.scope ?? r.home;

/**
 * Who leads: the lock's holder, its fencing token (one more on every change of hands) and since when.
 * The holder is a replica, or an egress command (`egress up` on some machine: id `cli:<host>:<pid>`,
 * with `command`, `host` and `pid`; cluster/command-lock.ts): then no replica leads until it ends.
 */
export interface LeaderInfo {
    id: string;
    token: number;
    since: string;
    command?: string;
    host?: string;
    pid?: number;
}

/** The lock's lifetime unless told otherwise; a replica holding it renews it every tenth of it (cluster.ts). */
export const LEADER_TTL_MS = 5000;

/** A command's holder ids start with this; a replica's never do (`<host>-<pid>-<random>`). */
export const COMMAND_HOLDER_PREFIX = "cli:";

/** True when an egress command (not a replica) holds the lock: no replica leads, nothing to forward to. */
export function heldByCommand(l: LeaderInfo | undefined): l is LeaderInfo & { command: string } {
    return !!l && l.id.startsWith(COMMAND_HOLDER_PREFIX);
}

/** A command holding the lock, for messages: "`egress up` (cli:host:pid)". */
export function describeCommandHolder(l: LeaderInfo): string {
    return `\`${l.command ?? "an egress command"}\` (${l.id}, since ${l.since})`;
}
/** The replicas with a heartbeat within `freshMs` (each marked leader or not), and the lock's holder. */
export interface ClusterRecords {
    replicas: (ReplicaInfo & { leader: boolean })[];
    leader?: LeaderInfo;
}

/**
 * Reads a stack's cluster from the store as it is written here: the one reader, for GET /v1/cluster and
 * for `egress doctor` (which has only a plain connection, no Cluster).
 */
export async function readCluster(redis: Redis, prefix: string, freshMs: number): Promise<ClusterRecords> {
    const [all, leaderRaw] = await Promise.all([
        redis.hgetall(prefix + CLUSTER_KEYS.replicas),
        redis.get(prefix + CLUSTER_KEYS.leader),
    ]);
    const leader = leaderRaw ? (JSON.parse(leaderRaw) as LeaderInfo) : undefined;
    const replicas = Object.values(all)
        .map((v) => JSON.parse(v) as ReplicaInfo)
        .filter((r) => Date.parse(r.lastHeartbeat) >= Date.now() - freshMs)
        .sort((a, b) => String(a.startedAt).localeCompare(String(b.startedAt)))
        .map((r) => ({ ...r, leader: r.id === leader?.id }));
    return { replicas, leader };
}

/** Drops the records of replicas not heard of for `maxAgeMs` (killed ones never remove their own). */
export async function pruneReplicas(redis: Redis, prefix: string, maxAgeMs: number): Promise<void> {
    const all = await redis.hgetall(prefix + CLUSTER_KEYS.replicas);
    const old = Object.entries(all)
        .filter(([, v]) => Date.parse((JSON.parse(v) as ReplicaInfo).lastHeartbeat) < Date.now() - maxAgeMs)
        .map(([k]) => k);
    if (old.length) await redis.hdel(prefix + CLUSTER_KEYS.replicas, ...old);
}
