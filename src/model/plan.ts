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

/** Member `index` of a pool: the pool's shared settings merged with the override for that index, if any. */
export function memberPlan(pool: PoolConfig, index: number): MemberPlan {
    const o = pool.members.find((m) => m.index === index);
    return {
        name: memberName(pool.name, index),
        index,
        port: o?.port ?? pool.port,
        placement: { ...pool.placement, ...(o?.placement ?? {}) },
        cloudInit: o?.cloudInit ?? pool.cloudInit,
        ...(pool.auth ? { auth: pool.auth } : {}),
    };
}

/**
 * Members 0..replicas-1 of a pool, each with the pool's shared settings merged with its override.
 * Overrides for indices at or above `replicas` are kept in config but plan nothing.
 */
export function planMembers(pool: PoolConfig): MemberPlan[] {
    return Array.from({ length: pool.replicas }, (_, index) => memberPlan(pool, index));
}

/**
 * Every distinct shape a member of the pool can take whatever its replica count: one member without an
 * override (the lowest index free of one) and each override. Kinds create what members share for
 * these up front (KVM templates), so a scale never needs a shared resource it did not have.
 */
export function possiblePlans(pool: PoolConfig): MemberPlan[] {
    const taken = new Set(pool.members.map((m) => m.index));
    let free = 0;
    while (taken.has(free)) free++;
    return [memberPlan(pool, free), ...pool.members.map((m) => memberPlan(pool, m.index))];
}
