/**
 * What GET /v1/pools shows of a rotating pool (its `rotation` field), and the pool-wide block's
 * lifecycle: when it began, logged and counted once as it begins and once as it clears.
 */
import type { Logger } from "pino";
import type { PoolConfig, RotateOnBlocksConfig } from "../../../model";
import type { Operation, RotationRecord } from "../../../state/operations/operation";
import type { PoolWideBlock } from "./blocks";

/** What GET /v1/pools shows of a pool with `rotateAfterSeconds` or `rotateOnBlocks`. */
export interface RotationView {
    rotateAfterSeconds?: number;
    rotateOnBlocks?: RotateOnBlocksConfig;
    maxSurge: number;
    ipMemorySeconds: number;
    /** The earliest deadline among its members (past while one waits), ISO. */
    nextDueAt?: string;
    /** Why members that are due wait. */
    holding?: string;
    /** Set while more than half of its members trip rotateOnBlocks: none is replaced for blocks. */
    poolWideBlock?: PoolWideBlock & { since: string };
    lastRotation?: { operation: string; status: Operation["status"]; at: string; rotations: RotationRecord[] };
}

/** Pools the rotator looks after: those that rotate by age or by blocks. */
export function rotates(p: PoolConfig): boolean {
    return p.rotateAfterSeconds !== undefined || p.rotateOnBlocks !== undefined;
}

/** The view's policy part, from the pool's config (what it had before stays: deadlines, last rotation). */
export function policyView(p: PoolConfig, before?: RotationView): RotationView {
    return {
        ...before,
        ...(p.rotateAfterSeconds !== undefined ? { rotateAfterSeconds: p.rotateAfterSeconds } : {}),
        ...(p.rotateOnBlocks ? { rotateOnBlocks: p.rotateOnBlocks } : {}),
        maxSurge: p.maxSurge,
        ipMemorySeconds: p.ipMemorySeconds,
    };
}

/**
 * Moves a pool's pool-wide block on with this round's verdict: begins (warn, `onBlock`), stays (its
 * `since` kept, its members and counts updated) or clears (info). Rotation by blocks resumes by itself:
 * every round judges the window afresh.
 */
export function trackPoolWideBlock(
    pool: string,
    view: RotationView,
    block: PoolWideBlock | undefined,
    at: number,
    log: Logger,
    onBlock?: (pool: string) => void,
): void {
    const was = view.poolWideBlock;
    if (!block) {
        if (was) {
            log.info(
                { pool, since: was.since },
                `pool ${pool} is no longer blocked as a whole; rotation by blocks resumes`,
            );
            view.poolWideBlock = undefined;
        }
        return;
    }
    view.poolWideBlock = { since: was?.since ?? new Date(at).toISOString(), ...block };
    if (was) return;
    log.warn({ pool, members: block.members }, `pool-wide block on pool ${pool}: ${block.detail}`);
    onBlock?.(pool);
}
