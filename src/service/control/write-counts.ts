import { loadStackConfig, scalableCounts, setPoolReplicas } from "../../config";
import type { ScalerDeps } from "./scaler-deps";

/**
 * Writes pool counts into the stack file for an operation (its scale, a rotation's or a rolling change's
 * surge), and has the file's counts recorded where the next leader finds them (ScalerDeps.recordCounts).
 * Returns every pool's count as the file says now.
 */
export function writeCounts(
    deps: ScalerDeps,
    counts: Record<string, number>,
    operation: string,
): Record<string, number> {
    for (const [pool, n] of Object.entries(counts)) setPoolReplicas(deps.projectRoot, deps.stack, pool, n);
    const cfg = loadStackConfig(deps.projectRoot, deps.stack);
    deps.recordCounts?.(scalableCounts(cfg), operation);
    return Object.fromEntries(cfg.pools.map((p) => [p.name, p.replicas]));
}
