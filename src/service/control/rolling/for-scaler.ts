import type { Logger } from "pino";
import type { Operation } from "../../../state/operations/operation";
import { waitHealthy } from "../../../fleet-ops/healthy";
import type { ReplaceResult } from "../../../fleet-ops/replace";
import { writeCounts } from "../write-counts";
import type { ScalerDeps } from "../scaler-deps";
import type { RollingDeps } from "../../../fleet-ops/rolling/run";
import type { EngineRetry } from "../../../fleet-ops/engine-retry";

/** The scaler's paths a rolling change is made of (scaler.ts passes them in, as to a rotation). */
export interface RollingSteps {
    /** Writes these counts to the stack file and waits out the drain of the members they remove. */
    drainTo(counts: Record<string, number>): Promise<void>;
    /** The heal path (replace.ts) over `op.members`: drain, targeted `up --replace`. */
    replace(): Promise<ReplaceResult>;
}

/**
 * A rolling change (run.ts) as one of the scaler's operations: the surge count is written to the stack
 * file (the file shows what runs; a stop mid-roll is undone from `op.rolling` at the next start), every
 * step is recorded on the operation, a batch is drained and replaced through the heal path with its
 * reasons, and health is the fleet's, re-read from state first (a targeted update leaves the stack
 * output behind).
 */
export function scalerRollingDeps(
    op: Operation,
    deps: ScalerDeps,
    steps: RollingSteps,
    log: Logger,
    retry?: EngineRetry,
): RollingDeps {
    return {
        retry,
        driver: deps.driver,
        projectRoot: deps.projectRoot,
        stack: deps.stack,
        log,
        progress: (e) => deps.ops.progress(op, e),
        record: (r) => deps.ops.update(op, { rolling: r }),
        surgeTo: (pool, count) => {
            writeCounts(deps, { [pool]: count }, op.id);
        },
        waitHealthy: async (ids, after, signal) => {
            await deps.rotation?.refresh();
            await waitHealthy(deps, ids, after, signal);
        },
        replace: (batch, detail) => {
            op.members = batch;
            // Kept for every batch: the operation ends naming each member it replaced and why.
            op.reasons = {
                ...op.reasons,
                ...Object.fromEntries(batch.map((m) => [m, { reason: "changed" as const, detail }])),
            };
            return steps.replace();
        },
        drainTo: (counts) => {
            op.members = op.rolling?.replaced ?? []; // what the operation replaced, whatever happens next
            return steps.drainTo(counts);
        },
    };
}
