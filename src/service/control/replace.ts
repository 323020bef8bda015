import type { Logger } from "pino";
import type { ProgressEvent, StackDriver } from "../../engine";
import type { ProxyMember } from "../../model";
import type { Operation } from "../../state/operations/operation";
import { healDrainTargets, healGoneTargets } from "./drain/plan";
import { type EngineRetry, engineRetry } from "./engine-retry";
import type { ScalerDeps } from "./scaler-deps";

export interface ReplaceResult {
    changes: Record<string, number>;
    durationMs: number;
    proxies?: ProxyMember[];
}

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

/**
 * The engine side of replaceMembers, for a runner without drain (the CLI's rolling change): `ids`'
 * resources from state, a refresh of those alone unless `refresh: false`, and the targeted
 * `up --replace` of their components.
 */
export async function replaceTargeted(
    driver: Pick<StackDriver, "memberTargets" | "refresh" | "up">,
    ids: readonly string[],
    log: Logger,
    opts: { refresh?: boolean; onProgress?: (e: ProgressEvent) => void; retry?: EngineRetry } = {},
): Promise<ReplaceResult> {
    const started = Date.now();
    const { onProgress } = opts;
    const retry = opts.retry ?? engineRetry(log, { progress: onProgress });
    const { found, missing } = await retry(() => driver.memberTargets(ids));
    if (missing.length) log.warn({ missing }, "members to replace are no longer in state; skipped");
    if (!found.size) return { changes: {}, durationMs: Date.now() - started };
    const components = [...found.values()].map((t) => t.component);
    const replace = [...found.values()].flatMap((t) => t.replace);
    let present = replace;
    if (replace.length && opts.refresh !== false) {
        await retry(() => driver.refresh({ target: replace, onProgress }));
        // The refresh drops resources deleted behind egress's back (a Kubernetes Deployment) from state, and
        // `up --replace` of a URN no longer in the stack fails; the targeted up creates them again anyway.
        const after = new Set(
            [...(await retry(() => driver.memberTargets(ids))).found.values()].flatMap((t) => t.replace),
        );
        present = replace.filter((u) => after.has(u));
    }
    const result = await retry(() =>
        driver.up({
            target: components,
            targetDependents: true,
            replace: present,
            refresh: false,
            onProgress,
        }),
    );
    return { changes: result.changes, durationMs: Date.now() - started, proxies: result.proxies };
}

/** Engine change counts of several runs of one operation, added up per kind of change. */
export function addChanges(...all: (Record<string, number> | undefined)[]): Record<string, number> {
    const out: Record<string, number> = {};
    for (const c of all) for (const [k, v] of Object.entries(c ?? {})) out[k] = (out[k] ?? 0) + v;
    return out;
}
