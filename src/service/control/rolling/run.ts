import type { Logger } from "pino";
import { loadStackConfig, setPoolReplicas } from "../../../config";
import { siblingUrns } from "../../../engine";
import { memberName, type ProxyMember } from "../../../model";
import type { Operation, RollingRecord } from "../../operations/journal";
import { retryTransient } from "../engine-retry";
import { waitHealthy } from "../healthy";
import { addChanges, type ReplaceResult } from "../replace";
import type { ScalerDeps } from "../scaler-deps";
import { planRollouts } from "./plan";

/** The scaler's paths a rolling change is made of (scaler.ts passes them in, as to a rotation). */
export interface RollingSteps {
    /** Writes these counts to the stack file and waits out the drain of the members they remove. */
    drainTo(counts: Record<string, number>): Promise<void>;
    /** The heal path (replace.ts) over `op.members`: drain, targeted `up --replace`. */
    replace(): Promise<ReplaceResult>;
}

type Applied = { changes: Record<string, number>; proxies?: ProxyMember[] };

/**
 * Per scaler, the stack config (counts left out) a preview last found replacing nothing, or a rolling
 * change applied: a count change alone replaces no member, so scale requests pay no preview run.
 */
const settledConfig = new WeakMap<ScalerDeps, string>();

/** The stack config with every pool's count left out: what decides whether an update replaces members. */
function configKey(deps: ScalerDeps): string {
    const c = loadStackConfig(deps.projectRoot, deps.stack);
    return JSON.stringify({ ...c, pools: c.pools.map((p) => ({ ...p, replicas: undefined })) });
}

/**
 * A count operation (scale/up/autoscale) whose plain `up` would replace members (the stack file
 * changed their port, image, cloud-init …): instead of one update that replaces them all together, per
 * pool of N members (rolling/plan.ts):
 *   1. surge: the pool grows to N + s (s ≤ maxSurge) through an `up` that targets the new members alone,
 *      so nothing else changes yet; they are created with the new config and must be healthy;
 *   2. batch by batch (≤ s + maxUnavailable members), the old members drain and are replaced through the
 *      heal path (a targeted replace: they come back with the new config); each must be healthy;
 *   3. after every pool, one plain `up` at the counts N: the surge members drain and go, and whatever
 *      else changed is applied. A failed step shrinks the surge back with a targeted `up` instead, so
 *      the members not yet replaced keep running the old config (the operation fails).
 * Returns undefined when nothing is replaced (the caller runs its plain `up`). docs/decisions.md has the why.
 */
export async function runRolling(
    op: Operation,
    deps: ScalerDeps,
    steps: RollingSteps,
    log: Logger,
    signal: AbortSignal,
): Promise<Applied | undefined> {
    const onProgress = (e: Parameters<ScalerDeps["ops"]["progress"]>[1]) => deps.ops.progress(op, e);
    const key = configKey(deps);
    if (settledConfig.get(deps) === key) return undefined;
    const replaced = await retryTransient(log, () => deps.driver.previewReplaced());
    const pools = loadStackConfig(deps.projectRoot, deps.stack).pools;
    const rollouts = planRollouts(replaced, Object.fromEntries(pools.map((p) => [p.name, p])));
    if (!rollouts.length) {
        settledConfig.set(deps, key);
        return undefined;
    }
    const counts = Object.fromEntries(rollouts.map((r) => [r.pool, r.replicas]));
    const note = (message: string) => {
        log.info(message);
        onProgress({ at: new Date().toISOString(), kind: "diagnostic", severity: "info", message });
    };
    const done: string[] = [];
    const changes: Record<string, number>[] = [];
    const surgeUrns: string[] = [];
    const targeted = async (target: string[]) =>
        (
            await retryTransient(log, () =>
                deps.driver.up({ target, targetDependents: true, refresh: false, onProgress }),
            )
        ).changes;
    let ok = false;
    try {
        for (const r of rollouts) {
            const surge = Array.from({ length: r.surge }, (_, j) => memberName(r.pool, r.replicas + j));
            const record = (i: number): RollingRecord => ({
                pool: r.pool,
                replicas: r.replicas,
                batch: i + 1,
                of: r.batches.length,
                members: r.batches[i],
                surge,
                replaced: [...done],
            });
            deps.ops.update(op, { rolling: record(0) });
            if (surge.length) {
                note(
                    `rolling ${r.pool}: ${surge.join(", ")} stand in while ${r.batches.flat().length} members are replaced`,
                );
                const { found } = await deps.driver.memberTargets([r.batches[0][0]]);
                const sibling = [...found.values()][0]?.component;
                if (!sibling) throw new Error(`${r.batches[0][0]} is no longer in state; nothing rolled`);
                setPoolReplicas(deps.projectRoot, deps.stack, r.pool, r.replicas + surge.length);
                surgeUrns.push(...siblingUrns(sibling, surge));
                changes.push(await targeted(siblingUrns(sibling, surge)));
                const at = Date.now();
                await deps.rotation?.refresh(); // a targeted update leaves the stack output behind: state says
                await waitHealthy(deps, surge, at, signal);
            }
            for (const [i, batch] of r.batches.entries()) {
                note(`rolling ${r.pool}: batch ${i + 1} of ${r.batches.length} replaces ${batch.join(", ")}`);
                const detail = `the stack's config replaces it (rolling batch ${i + 1} of ${r.batches.length})`;
                op.members = batch;
                // Kept for every batch: the operation ends naming each member it replaced and why.
                op.reasons = {
                    ...op.reasons,
                    ...Object.fromEntries(batch.map((m) => [m, { reason: "changed" as const, detail }])),
                };
                deps.ops.update(op, { rolling: record(i) });
                const result = await steps.replace();
                changes.push(result.changes);
                const at = Date.now();
                await deps.rotation?.refresh();
                await waitHealthy(deps, batch, at, signal);
                done.push(...batch);
                deps.ops.update(op, { rolling: { ...record(i), replaced: [...done] } });
            }
        }
        ok = true;
    } finally {
        op.members = done;
        await steps.drainTo(counts);
        if (!ok && surgeUrns.length) changes.push(await targeted(surgeUrns));
    }
    note(`rolling done: ${done.length} members replaced; applying the rest`);
    const rest = await retryTransient(log, () => deps.driver.up({ onProgress }));
    settledConfig.set(deps, key);
    return { changes: addChanges(...changes, rest.changes), proxies: rest.proxies };
}
