import type { Logger } from "pino";
import type { ProgressEvent } from "../../engine";
import type { Operation } from "../../state/operations/operation";
import type { EngineRetry } from "../../fleet-ops/engine-retry";
import { type ReplaceResult, replaceTargeted } from "../../fleet-ops/replace";
import { healDrainTargets, healGoneTargets } from "./drain/plan";
import type { ScalerDeps } from "./scaler-deps";

/**
 * The targeted replace of `op.members` that heal and rotation share: gone members' leases end at once,
 * the others drain; then the members' resources from state, a refresh of those alone, and an `up` that
 * targets their components (children come along as dependents) and replaces their custom resources. Two
 * engine runs because `up --refresh --target` fails on the CLI egress pins ("unknown provider",
 * docs/decisions/0033-heal.md). Members no longer in state (scaled away meanwhile) are skipped. `refresh: false`
 * skips the refresh run for members just seen healthy (a rotation): state is right about them.
 */
export async function replaceMembers(
    deps: ScalerDeps,
    op: Operation,
    log: Logger,
    signal: AbortSignal,
    opts: { refresh?: boolean; retry?: EngineRetry } = {},
): Promise<ReplaceResult> {
    const started = Date.now();
    const d = deps.drain;
    if (d) {
        // Gone members serve nothing: their leases end now. Unhealthy and aged ones drain first.
        const members = d.members().filter((m) => op.members?.includes(m.id));
        d.drainer.endLeases(healGoneTargets(members, op.reasons ?? {}));
        await d.drainer.run(
            () => healDrainTargets(members, op.reasons ?? {}),
            signal,
            (m, draining) => deps.ops.update(op, { drain: { draining, members: m } }),
        );
    }
    const onProgress = (e: ProgressEvent) => deps.ops.progress(op, e);
    const result = await replaceTargeted(deps.driver, op.members ?? [], log, { ...opts, onProgress });
    return { ...result, durationMs: Date.now() - started };
}
