/**
 * Rotation by age as pure functions: members' creation times, health and the pools' policies in, which
 * members are replaced now (and when the next one is due) out. The loop (rotator.ts) reads the facts and
 * queues the operation; tests drive this directly (test/unit/rotate-decide.test.ts).
 */

/** How far a member's deadline moves either way, as a share of `rotateAfterSeconds`. */
export const JITTER = 0.1;

export interface RotateMemberFacts {
    id: string;
    pool: string;
    index: number;
    /** Epoch ms its resources were created (state's `created` stamps); unset when state has none. */
    createdAt?: number;
    health: "healthy" | "unhealthy" | "unknown";
}

export interface PoolRotatePolicy {
    rotateAfterSeconds: number;
    maxSurge: number;
    /** Members the pool should have: rotation starts only while all of them are there and healthy. */
    replicas: number;
    /** Surge members come on top of `replicas`, so no more than `maxReplicas - replicas` of them fit. */
    maxReplicas: number;
}

export interface RotateInput {
    now: number;
    members: readonly RotateMemberFacts[];
    /** Pools with `rotateAfterSeconds` only. */
    pools: Readonly<Record<string, PoolRotatePolicy>>;
}

export interface DueMember {
    member: string;
    createdAt: number;
    dueAt: number;
}

/** One pool's answer: the members to rotate now (at most maxSurge), or why none is. */
export interface RotatePlan {
    pool: string;
    rotate: DueMember[];
    /** The earliest deadline among the pool's members (past when some wait), for GET /v1/pools. */
    nextDueAt?: number;
    /** Why members that are due are not rotated now. */
    holding?: string;
}

/**
 * A member's jitter in [-JITTER, JITTER): a hash of its id and creation time, so every decision about the
 * same member generation agrees (and tests can compute it), while its replacement, created later, draws anew.
 */
export function jitterOf(id: string, createdAt: number): number {
    // FNV-1a, 32 bits: enough spread for a fraction, no dependency.
    let h = 0x811c9dc5;
    for (const ch of `${id}@${createdAt}`) {
        h ^= ch.charCodeAt(0);
        h = Math.imul(h, 0x01000193) >>> 0;
    }
    return (h / 2 ** 32) * 2 * JITTER - JITTER;
}

/** Epoch ms at which a member created at `createdAt` is due for rotation. */
export function dueAtOf(id: string, createdAt: number, rotateAfterSeconds: number): number {
    return createdAt + Math.round(rotateAfterSeconds * 1000 * (1 + jitterOf(id, createdAt)));
}

/**
 * Per pool with a policy: the members past their deadline, oldest deadline first (then by index), at most
 * `maxSurge` and at most what fits under maxReplicas. A pool rotates nothing while any of its `replicas`
 * members is missing, not healthy, or of unknown age: a replacement then would run with capacity already
 * below what the pool promises (the reconcile loop repairs first). Members at or above `replicas` are
 * surge members of a rotation that did not finish; they are not rotated (the next scale removes them).
 */
export function decideRotations(input: RotateInput): RotatePlan[] {
    const out: RotatePlan[] = [];
    for (const [pool, policy] of Object.entries(input.pools)) {
        const members = input.members.filter((m) => m.pool === pool && m.index < policy.replicas);
        const dated = members.flatMap((m) =>
            m.createdAt === undefined
                ? []
                : [{ m, createdAt: m.createdAt, dueAt: dueAtOf(m.id, m.createdAt, policy.rotateAfterSeconds) }],
        );
        const nextDueAt = dated.length ? Math.min(...dated.map((d) => d.dueAt)) : undefined;
        const due = dated
            .filter((d) => d.dueAt <= input.now)
            .sort((a, b) => a.dueAt - b.dueAt || a.m.index - b.m.index);
        const plan: RotatePlan = { pool, rotate: [], ...(nextDueAt !== undefined ? { nextDueAt } : {}) };
        out.push(plan);
        if (!due.length) continue;
        const room = Math.min(policy.maxSurge, policy.maxReplicas - policy.replicas);
        const unhealthy = members.filter((m) => m.health !== "healthy").map((m) => m.id);
        if (members.length < policy.replicas)
            plan.holding = `${members.length} of ${policy.replicas} members exist; rotation waits for the pool to be whole`;
        else if (unhealthy.length)
            plan.holding = `${unhealthy.join(", ")} ${unhealthy.length > 1 ? "are" : "is"} not healthy; rotation waits so capacity never drops below ${policy.replicas}`;
        else if (dated.length < members.length)
            plan.holding = "state has no creation time for some members (older engine); their age is unknown";
        else if (room <= 0)
            plan.holding = `no room for a surge member: replicas (${policy.replicas}) is already maxReplicas`;
        else plan.rotate = due.slice(0, room).map((d) => ({ member: d.m.id, createdAt: d.createdAt, dueAt: d.dueAt }));
    }
    return out;
}
