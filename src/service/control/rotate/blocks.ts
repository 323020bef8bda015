/**
 * Rotation by blocks as pure functions: each member's outcome counts in its pool's window in, which members
 * a site blocks (tripped) and whether the whole pool is blocked out. decide.ts merges the tripped members
 * with those due by age; tests drive this directly (test/unit/rotate-blocks.test.ts).
 */
import type { RotateOnBlocksConfig } from "../../../model";

/** A member's outcomes in its pool's window (outcome-window.ts counts them). */
export interface OutcomeCounts {
    blocked: number;
    total: number;
}

export interface TrippedMember {
    member: string;
    counts: OutcomeCounts;
    /** "7 of 10 outcomes blocked in the last 300 s (ratio 0.5)": the drain's message and the record's detail. */
    detail: string;
}

/** More than half of a pool's members tripped at once: the site blocks the pool; nobody is replaced. */
export interface PoolWideBlock {
    members: string[];
    detail: string;
}

export interface BlockVerdict {
    /** Members to replace (empty while the pool is blocked as a whole). */
    tripped: TrippedMember[];
    poolWideBlock?: PoolWideBlock;
}

/** The words for a member's counts against the pool's policy. */
export function blockDetail(c: OutcomeCounts, policy: RotateOnBlocksConfig): string {
    return `${c.blocked} of ${c.total} outcomes blocked in the last ${policy.windowSeconds} s (ratio ${policy.ratio})`;
}

/** Whether these counts trip the policy: enough outcomes, and a blocked share at or above the ratio. */
export function trips(c: OutcomeCounts, policy: RotateOnBlocksConfig): boolean {
    return c.total >= policy.minOutcomes && c.blocked >= policy.ratio * c.total;
}

/**
 * The members of one pool (its `replicas` members; surge members are not judged) that trip the policy,
 * most blocked share first (then by id). When more than half of `replicas` trip, the site blocks the pool
 * rather than its members: replacing them would churn the whole pool for nothing (a rotation storm), so
 * none is replaced and the verdict says so; the pool is judged afresh every round, so it resumes once
 * the blocks age out of the window.
 */
export function judgeBlocks(
    members: readonly string[],
    replicas: number,
    counts: (member: string) => OutcomeCounts,
    policy: RotateOnBlocksConfig,
): BlockVerdict {
    const tripped = members
        .map((member) => ({ member, counts: counts(member) }))
        .filter((t) => trips(t.counts, policy))
        .map((t) => ({ ...t, detail: blockDetail(t.counts, policy) }))
        .sort((a, b) => share(b.counts) - share(a.counts) || a.member.localeCompare(b.member));
    if (tripped.length > replicas / 2)
        return {
            tripped: [],
            poolWideBlock: {
                members: tripped.map((t) => t.member).sort(),
                detail: `${tripped.length} of ${replicas} members tripped rotateOnBlocks at once (more than half): the site blocks the pool, so none is replaced`,
            },
        };
    return { tripped };
}

function share(c: OutcomeCounts): number {
    return c.total ? c.blocked / c.total : 0;
}
