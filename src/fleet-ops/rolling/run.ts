import type { Logger } from "pino";
import { loadStackConfig } from "../../config";
import { siblingUrns, type ProgressEvent, type StackDriver } from "../../engine";
import { memberName, type ProxyMember } from "../../model";
import type { RollingRecord } from "../../state/operations/operation";
import { type EngineRetry, engineRetry } from "../engine-retry";
import { addChanges, type ReplaceResult } from "../replace";
import { planRollouts } from "./plan";

/**
 * What a rolling change needs from whoever runs it: the service's scaler (rolling/for-scaler.ts) or
 * the CLI's `egress up` (src/cli/rolling.ts). The steps are the same; drain, health and the stack
 * file's count are each runner's own.
 */
export interface RollingDeps {
    driver: Pick<StackDriver, "previewReplaced" | "memberTargets" | "up">;
    projectRoot: string;
    stack: string;
    log: Logger;
    /** Every engine run's progress, and the roll's own lines ("rolling web: batch 2 of 4 replaces web-1"). */
    progress(e: ProgressEvent): void;
    /** Where the roll is, after every step: the batch that runs and what was replaced so far. */
    record(r: RollingRecord): void;
    /** Makes the program see `pool` at `count` members (the surge): the service writes the stack file. */
    surgeTo(pool: string, count: number): Promise<void> | void;
    /** Waits until every one of `ids` passed a health probe after `after` (epoch ms); throws past its timeout. */
    waitHealthy(ids: readonly string[], after: number, signal: AbortSignal): Promise<void>;
    /** A targeted `up --replace` of `batch` (they come back with the new config); `detail` says why. */
    replace(batch: string[], detail: string): Promise<ReplaceResult>;
    /** Back to the pools' counts (the surge goes): the service drains the surge members first. */
    drainTo(counts: Record<string, number>): Promise<void>;
    /** The final plain `up`'s refresh (the CLI's `--no-refresh`). @default true */
    refresh?: boolean;
    /** The runner's retry of engine runs (engine-retry.ts). @default engineRetry(log), its retries shown through `progress` */
    retry?: EngineRetry;
}

type Applied = { changes: Record<string, number>; proxies?: ProxyMember[] };

/**
 * Per stack driver (one per scaler), the stack config (counts left out) a preview last found replacing
 * nothing, or a rolling change applied: a count change alone replaces no member, so scale requests pay
 * no preview run.
 */
const settledConfig = new WeakMap<object, string>();

/** The stack config with every pool's count left out: what decides whether an update replaces members. */
/** The stack file's config with the pools' counts left out: what a count change alone does not change. */
export function configKey(deps: { projectRoot: string; stack: string }): string {
    const c = loadStackConfig(deps.projectRoot, deps.stack);
    return JSON.stringify({ ...c, pools: c.pools.map((p) => ({ ...p, replicas: undefined })) });
}

/**
 * An update whose plain `up` would replace members (the stack file changed their port, image,
 * cloud-init …): instead of one update that replaces them all together, per pool of N members
 * (rolling/plan.ts):
 *   1. surge: the pool grows to N + s (s ≤ maxSurge) through an `up` that targets the new members alone,
 *      so nothing else changes yet; they are created with the new config and must be healthy;
 *   2. batch by batch (≤ s + maxUnavailable members), the old members are replaced through a targeted
 *      replace (they come back with the new config; the service drains them first); each must be healthy;
 *   3. after every pool, one plain `up` at the counts N: the surge members go, and whatever else changed
 *      is applied. A failed step shrinks the surge back with a targeted `up` instead, so the members not
 *      yet replaced keep running the old config (the roll throws).
 * Returns undefined when nothing is replaced (the caller runs its plain `up`). docs/decisions/0053-rolling.md has the why.
 */
export async function runRolling(deps: RollingDeps, signal: AbortSignal): Promise<Applied | undefined> {
    const { log } = deps;
    const onProgress = (e: ProgressEvent) => deps.progress(e);
    const retry = deps.retry ?? engineRetry(log, { progress: onProgress });
    const key = configKey(deps);
    if (settledConfig.get(deps.driver) === key) return undefined;
    const replaced = await retry(() => deps.driver.previewReplaced());
    const pools = loadStackConfig(deps.projectRoot, deps.stack).pools;
    const rollouts = planRollouts(replaced, Object.fromEntries(pools.map((p) => [p.name, p])));
    if (!rollouts.length) {
        settledConfig.set(deps.driver, key);
        return undefined;
    }
    const counts = Object.fromEntries(rollouts.map((r) => [r.pool, r.replicas]));
    const roll = rollState(deps, retry, signal);
    let ok = false;
    try {
        for (const r of rollouts) await rollPool(deps, r, roll, retry, signal);
        ok = true;
    } finally {
        await deps.drainTo(counts);
        if (!ok && roll.surgeUrns.length) {
            roll.note(`rolling stopped after ${roll.done.length} members replaced; the surge goes again`);
            roll.changes.push(await roll.targeted(roll.surgeUrns));
        }
    }
    roll.note(`rolling done: ${roll.done.length} members replaced; applying the rest`);
    const rest = await retry(() => deps.driver.up({ onProgress, refresh: deps.refresh }));
    settledConfig.set(deps.driver, key);
    return { changes: addChanges(...roll.changes, rest.changes), proxies: rest.proxies };
}

type Rollout = ReturnType<typeof planRollouts>[number];

/** What a roll keeps across its pools, and the steps every pool's roll takes. */
interface RollState {
    /** Members replaced so far, over all pools. */
    done: string[];
    /** Each `up`'s changes, summed into the roll's result. */
    changes: Record<string, number>[];
    /** The surge members' resources: a roll that fails shrinks them away with a targeted `up`. */
    surgeUrns: string[];
    /** Logs a step and tells the operation's followers. */
    note(message: string): void;
    /** A targeted `up` of these resources (and their dependents), retried while the engine's failure is transient. */
    targeted(target: string[]): Promise<Record<string, number>>;
    /** Waits until these members pass their health probes. */
    healthy(ids: string[]): Promise<void>;
}

function rollState(deps: RollingDeps, retry: EngineRetry, signal: AbortSignal): RollState {
    const onProgress = (e: ProgressEvent) => deps.progress(e);
    return {
        done: [],
        changes: [],
        surgeUrns: [],
        note(message) {
            deps.log.info(message);
            onProgress({ at: new Date().toISOString(), kind: "diagnostic", severity: "info", message });
        },
        targeted: async (target) =>
            (await retry(() => deps.driver.up({ target, targetDependents: true, refresh: false, onProgress }))).changes,
        healthy: async (ids) => {
            const at = Date.now();
            await deps.waitHealthy(ids, at, signal);
        },
    };
}

/** One pool's roll: its surge members stand in first, then its batches are replaced one after another. */
async function rollPool(
    deps: RollingDeps,
    r: Rollout,
    roll: RollState,
    retry: EngineRetry,
    signal: AbortSignal,
): Promise<void> {
    const surge = Array.from({ length: r.surge }, (_, j) => memberName(r.pool, r.replicas + j));
    const record = (i: number): RollingRecord => ({
        pool: r.pool,
        replicas: r.replicas,
        batch: i + 1,
        of: r.batches.length,
        members: r.batches[i],
        surge,
        replaced: [...roll.done],
    });
    deps.record(record(0));
    if (surge.length) {
        roll.note(
            `rolling ${r.pool}: ${surge.join(", ")} stand in while ${r.batches.flat().length} members are replaced`,
        );
        const { found } = await retry(() => deps.driver.memberTargets([r.batches[0][0]]));
        const sibling = [...found.values()][0]?.component;
        if (!sibling) throw new Error(`${r.batches[0][0]} is no longer in state; nothing rolled`);
        await deps.surgeTo(r.pool, r.replicas + surge.length);
        roll.surgeUrns.push(...siblingUrns(sibling, surge));
        roll.changes.push(await roll.targeted(siblingUrns(sibling, surge)));
        await roll.healthy(surge);
    }
    for (const [i, batch] of r.batches.entries()) {
        if (signal.aborted) throw signal.reason as Error; // stopped (Ctrl-C, a service stop): no new batch
        roll.note(`rolling ${r.pool}: batch ${i + 1} of ${r.batches.length} replaces ${batch.join(", ")}`);
        deps.record(record(i));
        const result = await deps.replace(
            batch,
            `the stack's config replaces it (rolling batch ${i + 1} of ${r.batches.length})`,
        );
        roll.changes.push(result.changes);
        await roll.healthy(batch);
        roll.done.push(...batch);
        deps.record({ ...record(i), replaced: [...roll.done] });
    }
}
