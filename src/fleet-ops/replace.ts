import type { Logger } from "pino";
import type { ProgressEvent, StackDriver } from "../engine";
import type { ProxyMember } from "../model";
import { type EngineRetry, engineRetry } from "./engine-retry";

export interface ReplaceResult {
    changes: Record<string, number>;
    durationMs: number;
    proxies?: ProxyMember[];
}

/**
 * The engine side of replaceMembers (src/service/control/replace.ts), for a runner without drain (the
 * CLI's rolling change): `ids`' resources from state, a refresh of those alone unless `refresh: false`,
 * and the targeted `up --replace` of their components.
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
