/**
 * Where a member's state lives when its pool spreads its members over stacks (`membersPerStack`, issue
 * 33). The engine rewrites a stack's whole checkpoint after every step, so a change costs in proportion
 * to the stack's size: a pool of 1,000 members in one stack pays for all 1,000 on every +10, heal and
 * rotation. With `membersPerStack: S`, members 0..S-1 stay in the installation's stack (so a pool that
 * never outgrows S is exactly what it was) and members kS..(k+1)S-1 live in stack `<stack>.<pool>.<k>`,
 * a shard, whose checkpoint holds those S alone. Pure: the engine, the program and the CLI share it.
 */
import type { PoolConfig } from "./pool";

/** One shard of a pool: its stack and the member indices it holds, `from` (inclusive) to `to` (exclusive). */
export interface Shard {
    stack: string;
    pool: string;
    /** The shard's number, 1 and up (shard 0 is the installation's stack itself). */
    k: number;
    from: number;
    to: number;
}

/** The shard stack of pool `pool`'s shard `k` of installation stack `stack` (pool names are DNS labels: no dots). */
export function shardStackName(stack: string, pool: string, k: number): string {
    return `${stack}.${pool}.${k}`;
}

/** The shard a stack name is, or undefined for a name that is not `<stack>.<pool>.<k>` with k ≥ 1. */
export function parseShardStack(name: string): { stack: string; pool: string; k: number } | undefined {
    const m = /^(.+)\.([a-z0-9](?:[a-z0-9-]*[a-z0-9])?)\.([1-9][0-9]*)$/.exec(name);
    return m ? { stack: m[1], pool: m[2], k: Number(m[3]) } : undefined;
}

/** Which shard holds member `index` of a pool that keeps `perStack` members per stack (0: the installation's stack). */
export function shardOfIndex(index: number, perStack: number): number {
    return Math.floor(index / perStack);
}

/**
 * The shard stacks pools at these counts need (k ≥ 1 whose range holds a member), in pool order then k.
 * With `spare`, also each sharded pool's next shard, empty: kept ready so that growing into it costs
 * what a change in any other shard costs, not a stack's creation.
 */
export function shardsFor(
    stack: string,
    pools: readonly Pick<PoolConfig, "name" | "replicas" | "membersPerStack">[],
    opts: { spare?: boolean } = {},
): Shard[] {
    const out: Shard[] = [];
    for (const p of pools) {
        const size = p.membersPerStack;
        if (!size) continue;
        const last = Math.ceil(p.replicas / size) - (opts.spare ? 0 : 1);
        for (let k = 1; k <= last; k++)
            out.push({ stack: shardStackName(stack, p.name, k), pool: p.name, k, from: k * size, to: (k + 1) * size });
    }
    return out;
}

/** True when member `index` of `pool` lives in the installation's stack (every member of an unsharded pool). */
export function inMainStack(pool: Pick<PoolConfig, "membersPerStack">, index: number): boolean {
    return !pool.membersPerStack || index < pool.membersPerStack;
}

/** The stack a URN names (`urn:pulumi:<stack>::<project>::…`). */
export function stackOfUrn(urn: string): string {
    return urn.split("::")[0].slice("urn:pulumi:".length);
}

/** The same URN in another stack (a member's URN in its shard: the parent chain and name are the same). */
export function urnInStack(urn: string, stack: string): string {
    return `urn:pulumi:${stack}::${urn.split("::").slice(1).join("::")}`;
}
