import type { Logger } from "pino";
import type { ProgressEvent } from "../../engine";
import type { ProxyMember } from "../../model";
import type { Operation } from "../../state/operations/operation";
import { scaleDownTargets } from "./drain/plan";
import { type EngineRetry, engineRetry } from "../../fleet-ops/engine-retry";
import { replaceMembers } from "./replace";
import { type RollingSteps, scalerRollingDeps } from "./rolling/for-scaler";
import { configKey, runRolling } from "../../fleet-ops/rolling/run";
import { type MoreDue, runRotation } from "./rotate/run";
import type { ScalerDeps } from "./scaler-deps";
import { writeCounts } from "./write-counts";

/** What one operation's work needs from the Scaler (scaler.ts), which queues, locks and records it. */
export interface RunContext {
    deps: ScalerDeps;
    /** Aborted when the service stops: drains and health waits end early. */
    signal: AbortSignal;
    /** A rotation's way to ask for members that came due while it was queued (rotate/run.ts). */
    more?: MoreDue;
    /** True while a scale/up operation waits for its drain: the Scaler folds requests into it meanwhile. */
    setDraining(on: boolean): void;
    /** Every engine run of the operation, retried while the backend is down or the stack locked (engine-retry.ts). */
    retry?: EngineRetry;
}

/** The result of one operation's work: what to record, and the stack output members when it succeeded. */
export interface RunResult {
    patch: Partial<Operation>;
    proxies?: ProxyMember[];
}

/**
 * The work of one operation once the stack's writer lock is held: a heal replaces its members, a
 * rotation its members behind surge members, and scale/up/autoscale write their counts, drain what they
 * remove and apply (rolling the members the update would replace, in batches). Throws what failed.
 */
export async function runOperation(op: Operation, log: Logger, context: RunContext): Promise<RunResult> {
    const { deps, signal } = context;
    const retry = context.retry ?? engineRetry(log, { signal, progress: (e) => deps.ops.progress(op, e) });
    const ctx = { ...context, retry };
    if (op.kind === "heal") {
        const result = await replaceMembers(deps, op, log, signal, { retry });
        log.info({ changes: result.changes, durationMs: result.durationMs }, "operation succeeded");
        return { patch: { status: "succeeded", changes: result.changes }, proxies: result.proxies };
    }
    if (op.kind === "rotate") {
        const result = await runRotation(op, deps, rotationSteps(op, log, ctx), log, signal, ctx.more);
        log.info({ changes: result.changes, rotations: op.rotations }, "operation succeeded");
        return {
            patch: { status: "succeeded", changes: result.changes, rotations: op.rotations },
            proxies: result.proxies,
        };
    }
    // Counts written at start (the stack file shows what runs; a restart mid-drain knows the target),
    // then members the update would replace roll in batches (src/fleet-ops/rolling/run.ts), else one plain `up`.
    await drainScaleDown(op, log, ctx);
    const key = configKey(deps);
    const result =
        (await runRolling(scalerRollingDeps(op, deps, rotationSteps(op, log, ctx), log, retry), signal)) ??
        (await retry(() => upForCounts(op, deps, key)));
    appliedConfig.set(deps.driver, key);
    log.info({ changes: result.changes, rolling: op.rolling }, "operation succeeded");
    return {
        patch: {
            status: "succeeded",
            changes: result.changes,
            ...(result.proxies ? { applied: appliedCounts(op, result.proxies) } : {}),
        },
        proxies: result.proxies,
    };
}

/**
 * Per driver, the stack file's config (counts aside: src/fleet-ops/rolling/run.ts configKey) that the last operation
 * applied in full. A scale may target its members only while the file says what was applied: an edit
 * beside the counts (a pool removed, a setting changed without replacing members) needs a plain `up`, or
 * it would wait for the next one while the service reports it applied.
 */
const appliedConfig = new WeakMap<object, string>();

/**
 * The `up` of a scale or an autoscale step, which change counts alone: it targets the members added and
 * removed (engine countTargets), without a refresh (the reconcile loop finds dead members), so its cost does
 * not grow with the fleet. Reached only once the stack config is known to replace nothing (runRolling), and
 * targeted only when the rest of the config (`key`, configKey now) is what the last operation applied. An
 * `up` operation converges everything, and so does a count change with nothing in state to name members
 * after. A rotation's surge growth and shrink (`counts`) come this way too.
 */
async function upForCounts(op: Operation, deps: ScalerDeps, key: string, counts = op.desired) {
    const onProgress = (e: ProgressEvent) => deps.ops.progress(op, e);
    const applied = appliedConfig.get(deps.driver) === key;
    const target = op.kind === "up" || !applied ? undefined : await deps.driver.countTargets(counts);
    return deps.driver.up({ onProgress, ...(target ? { target, targetDependents: true, refresh: false } : {}) });
}

/** The scale path and the heal path, as a rotation (rotate/run.ts) or a rolling change (src/fleet-ops/rolling/run.ts) runs them. */
function rotationSteps(
    op: Operation,
    log: Logger,
    ctx: RunContext & { retry: EngineRetry },
): Parameters<typeof runRotation>[2] & RollingSteps {
    const { deps, signal, retry } = ctx;
    return {
        drainTo: (counts) => drainScaleDown(op, log, ctx, counts),
        // A surge's growth and shrink target the members they add and remove (as a scale does), unless the
        // stack file says more than what was applied (a rolling change's new config): then a plain `up`.
        applyCounts: async (counts) => {
            await drainScaleDown(op, log, ctx, counts);
            const key = configKey(deps);
            const result = await retry(() => upForCounts(op, deps, key, counts));
            return { changes: result.changes, proxies: result.proxies };
        },
        // Rotated (changed) members were healthy when chosen: no refresh run needed to learn what exists.
        replace: () => replaceMembers(deps, op, log, signal, { refresh: false, retry }),
    };
}

/**
 * Writes the operation's counts to the stack file, then waits out the drain of the members they
 * remove. Requests folded in meanwhile change `op.desired`: the file is rewritten and the drain
 * re-planned (members that now stay are leasable again at once). A rotation passes its own counts
 * (`desired`): requests never fold into it.
 */
async function drainScaleDown(op: Operation, log: Logger, ctx: RunContext, desired = op.desired): Promise<void> {
    let written = "";
    let counts: Record<string, number> = {};
    const write = () => {
        if (JSON.stringify(desired) === written) return;
        counts = writeCounts(ctx.deps, desired, op.id);
        written = JSON.stringify(desired);
    };
    write();
    const d = ctx.deps.drain;
    if (!d) return;
    ctx.setDraining(desired === op.desired);
    try {
        await d.drainer.run(
            () => {
                write();
                return scaleDownTargets(d.members(), counts);
            },
            ctx.signal,
            (members, draining) => ctx.deps.ops.update(op, { drain: { draining, members } }),
        );
    } finally {
        ctx.setDraining(false);
    }
    write();
    log.debug({ desired }, "drain done; applying");
}

/** Members per pool the update left, for the pools the operation set: what it really applied. */
function appliedCounts(op: Operation, proxies: ProxyMember[]): Record<string, number> {
    const out: Record<string, number> = {};
    for (const pool of Object.keys(op.desired)) out[pool] = proxies.filter((p) => p.pool === pool).length;
    return out;
}

/** Operations that set pool counts, into which scale requests fold (heal and rotate replace members instead). */
export function setsCounts(op: Operation): boolean {
    return op.kind !== "heal" && op.kind !== "rotate";
}
