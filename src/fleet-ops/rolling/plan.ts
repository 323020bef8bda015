/**
 * Rolling changes as pure functions: which members of which pool an `up` would replace (from the
 * engine's preview), and the batches they are replaced in. A batch is at most maxSurge + maxUnavailable
 * members: with `surge` members standing above the pool's N, replacing b members at once leaves
 * N + surge − b healthy, which stays ≥ N − maxUnavailable exactly when b ≤ surge + maxUnavailable.
 */
import { type CatalogueEntry, EXIT } from "../../model/error-catalogue";

export interface RollingPolicy {
    replicas: number;
    maxReplicas: number;
    maxSurge: number;
    maxUnavailable: number;
}

export interface PoolRollout {
    pool: string;
    /** The pool's count, kept throughout (the surge stands above it). */
    replicas: number;
    /** Members created above `replicas` before the first batch (≤ maxSurge, ≤ room under maxReplicas). */
    surge: number;
    /** The replaced members in the order they go, batch by batch (ascending index). */
    batches: string[][];
}

/** A pool with no room to roll its change (at maxReplicas, maxUnavailable 0): the person must change something. */
export class NoRoomToRollError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "NoRoomToRollError" };
    }
    constructor(message: string) {
        super(message);
        this.name = "NoRoomToRollError";
    }
}

/**
 * The rollout per pool for these replaced members (ids `<pool>-<index>`): only members below the pool's
 * count (others are being removed anyway). Throws when a pool has no room to roll: at maxReplicas with
 * maxUnavailable 0, the error says what to change.
 */
export function planRollouts(replaced: readonly string[], pools: Record<string, RollingPolicy>): PoolRollout[] {
    const byPool = new Map<string, string[]>();
    for (const id of replaced) {
        const pool = Object.keys(pools).find((p) => memberIndex(id, p) !== undefined);
        if (pool === undefined || memberIndex(id, pool)! >= pools[pool].replicas) continue;
        byPool.set(pool, [...(byPool.get(pool) ?? []), id]);
    }
    const out: PoolRollout[] = [];
    for (const [pool, ids] of [...byPool].sort(([a], [b]) => a.localeCompare(b))) {
        const p = pools[pool];
        ids.sort((a, b) => memberIndex(a, pool)! - memberIndex(b, pool)!);
        const surge = Math.min(p.maxSurge, Math.max(0, p.maxReplicas - p.replicas), ids.length);
        const size = surge + p.maxUnavailable;
        if (size === 0)
            throw new NoRoomToRollError(
                `pool ${pool} cannot roll its change: it is at maxReplicas (${p.maxReplicas}) and maxUnavailable is 0; raise maxReplicas or maxUnavailable, or apply it with \`egress up --all-at-once\``,
            );
        const batches: string[][] = [];
        for (let i = 0; i < ids.length; i += size) batches.push(ids.slice(i, i + size));
        out.push({ pool, replicas: p.replicas, surge, batches });
    }
    return out;
}

/** The index of member `id` of `pool` (`<pool>-<index>`), or undefined when it is not one of its members. */
function memberIndex(id: string, pool: string): number | undefined {
    const rest = id.startsWith(`${pool}-`) ? id.slice(pool.length + 1) : "";
    return /^\d+$/.test(rest) ? Number(rest) : undefined;
}
