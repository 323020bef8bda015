import type { CloudInit, Placement, PoolConfig, ProxyAuthConfig } from "./pool";

/** Everything one pool member needs, after per-member overrides were applied. */
export interface MemberPlan {
    /** Stable name `<pool>-<index>`: scaling never renames a surviving member. */
    name: string;
    index: number;
    port: number;
    placement: Placement;
    cloudInit?: CloudInit;
    /** The pool's proxy credentials, when it requires them (the same for every member). */
    auth?: ProxyAuthConfig;
}

/** Stable member name. Indices are dense, so scaling down always removes the highest ones. */
export function memberName(pool: string, index: number): string {
    return `${pool}-${index}`;
}

/**
 * Members 0..replicas-1 of a pool, each with the pool's shared settings merged with its override.
 * Overrides for indices at or above `replicas` are kept in config but plan nothing.
 */
export function planMembers(pool: PoolConfig): MemberPlan[] {
    const overrides = new Map(pool.members.map((m) => [m.index, m]));
    const plans: MemberPlan[] = [];
    for (let index = 0; index < pool.replicas; index++) {
        const o = overrides.get(index);
        plans.push({
            name: memberName(pool.name, index),
            index,
            port: o?.port ?? pool.port,
            placement: { ...pool.placement, ...(o?.placement ?? {}) },
            cloudInit: o?.cloudInit ?? pool.cloudInit,
            ...(pool.auth ? { auth: pool.auth } : {}),
        });
    }
    return plans;
}
