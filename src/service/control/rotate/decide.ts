/**
 * Rotation by age and by blocks as pure functions: members' creation times, outcome counts, health and the
 * pools' policies in, which members are replaced now (and when the next one is due) out. The loop
 * (rotator.ts) reads the facts and queues the operation; tests drive this directly
 * (test/unit/rotate-decide.test.ts, rotate-blocks.test.ts).
 */
import type { RotateOnBlocksConfig } from "../../../model";
import { judgeBlocks, type OutcomeCounts, type PoolWideBlock } from "./blocks";

/**
 * How far a member's deadline moves ahead, as a share of `rotateAfterSeconds`: only ahead, so no member
 * outlives `rotateAfterSeconds` by more than its replacement takes, while members made together (a pool
 * from zero) come due spread over this share of the period instead of in one round.
 */
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
    /** Unset: no rotation by age. */
    rotateAfterSeconds?: number;
    /** Unset: no rotation by blocks. */
    rotateOnBlocks?: RotateOnBlocksConfig;
    maxSurge: number;
    /** Members the pool should have: rotation starts only while all of them are there and healthy. */
    replicas: number;
    /** Surge members come on top of `replicas`, so no more than `maxReplicas - replicas` of them fit. */
    maxReplicas: number;
}

export interface RotateInput {
    now: number;
    members: readonly RotateMemberFacts[];
    /** Pools with `rotateAfterSeconds` or `rotateOnBlocks` only. */
    pools: Readonly<Record<string, PoolRotatePolicy>>;
    /** A member's outcomes in the last `windowSeconds` (outcome-window.ts); none counted when unset. */
    outcomes?: (member: string, windowSeconds: number) => OutcomeCounts;
}

export interface DueMember {
    member: string;
    reason: "age" | "blocked";
    /** Set when state knows it (always for `age`). */
    createdAt?: number;
    /** `age` only: its deadline. */
    dueAt?: number;
    /** `blocked` only: its counts in words (blocks.ts blockDetail). */
    detail?: string;
}

/** One pool's answer: the members to rotate now (at most maxSurge), or why none is. */
export interface RotatePlan {
    pool: string;
    rotate: DueMember[];
    /** The earliest deadline among the pool's members (past when some wait), for GET /v1/pools. */
    nextDueAt?: number;
    /** Why members that are due are not rotated now. */
    holding?: string;
    /** More than half of the members tripped rotateOnBlocks: none is replaced for blocks (blocks.ts). */
    poolWideBlock?: PoolWideBlock;
}

/**
 * A member's jitter in (-JITTER, 0]: a hash of its id and creation time, so every decision about the
 * same member generation agrees (and tests can compute it), while its replacement, created later, draws anew.
 */
export function jitterOf(id: string, createdAt: number): number {
    // FNV-1a, 32 bits: enough spread for a fraction, no dependency.
    let h = 0x811c9dc5;
    for (const ch of `${id}@${createdAt}`) {
        h ^= ch.charCodeAt(0);
        h = Math.imul(h, 0x01000193) >>> 0;
    }
    return -(h / 2 ** 32) * JITTER;
}

/** Epoch ms at which a member created at `createdAt` is due for rotation. */
export function dueAtOf(id: string, createdAt: number, rotateAfterSeconds: number): number {
    return createdAt + Math.round(rotateAfterSeconds * 1000 * (1 + jitterOf(id, createdAt)));
}

/**
 * Per pool with a policy: the members a site blocks (blocks.ts; most blocked first), then those past their
 * deadline (oldest deadline first, then by index), at most `maxSurge` and at most what fits under
 * maxReplicas. A pool rotates nothing while any of its `replicas` members is missing or not healthy: a
 * replacement then would run with capacity already below what the pool promises (the reconcile loop
 * repairs first); nor by age while a member's age is unknown. Members at or above `replicas` are surge
 * members of a rotation that did not finish; they are not rotated (the next scale removes them).
 */
export function decideRotations(input: RotateInput): RotatePlan[] {
    const out: RotatePlan[] = [];
    for (const [pool, policy] of Object.entries(input.pools)) {
        const members = input.members.filter((m) => m.pool === pool && m.index < policy.replicas);
        const after = policy.rotateAfterSeconds;
        const dated = members.flatMap((m) =>
            m.createdAt === undefined || after === undefined
                ? []
                : [{ m, createdAt: m.createdAt, dueAt: dueAtOf(m.id, m.createdAt, after) }],
        );
        const nextDueAt = dated.length ? Math.min(...dated.map((d) => d.dueAt)) : undefined;
        const aged: DueMember[] = dated
            .filter((d) => d.dueAt <= input.now)
            .sort((a, b) => a.dueAt - b.dueAt || a.m.index - b.m.index)
            .map((d) => ({ member: d.m.id, reason: "age", createdAt: d.createdAt, dueAt: d.dueAt }));
        const blocks = policy.rotateOnBlocks;
        const verdict = blocks
            ? judgeBlocks(
                  members.map((m) => m.id),
                  policy.replicas,
                  (id) => input.outcomes?.(id, blocks.windowSeconds) ?? { blocked: 0, total: 0 },
                  blocks,
              )
            : { tripped: [] };
        const createdAt = new Map(members.map((m) => [m.id, m.createdAt]));
        const blocked: DueMember[] = verdict.tripped.map((t) => ({
            member: t.member,
            reason: "blocked",
            ...(createdAt.get(t.member) !== undefined ? { createdAt: createdAt.get(t.member) } : {}),
            detail: t.detail,
        }));
        const ageKnown = after === undefined || dated.length === members.length;
        const due = [...blocked, ...(ageKnown ? aged.filter((a) => !blocked.some((b) => b.member === a.member)) : [])];
        const plan: RotatePlan = {
            pool,
            rotate: [],
            ...(nextDueAt !== undefined ? { nextDueAt } : {}),
            ...(verdict.poolWideBlock ? { poolWideBlock: verdict.poolWideBlock } : {}),
        };
        out.push(plan);
        if (!due.length && (ageKnown || !aged.length)) continue;
        const room = Math.min(policy.maxSurge, policy.maxReplicas - policy.replicas);
        const unhealthy = members.filter((m) => m.health !== "healthy").map((m) => m.id);
        if (members.length < policy.replicas)
            plan.holding = `${members.length} of ${policy.replicas} members exist; rotation waits for the pool to be whole`;
        else if (unhealthy.length)
            plan.holding = `${unhealthy.join(", ")} ${unhealthy.length > 1 ? "are" : "is"} not healthy; rotation waits so capacity never drops below ${policy.replicas}`;
        else if (!due.length)
            plan.holding = "state has no creation time for some members (older engine); their age is unknown";
        else if (room <= 0)
            plan.holding = `no room for a surge member: replicas (${policy.replicas}) is already maxReplicas`;
        else plan.rotate = due.slice(0, room);
    }
    return out;
}
