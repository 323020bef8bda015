import type { CheckVerdict } from "../kind";

/**
 * Checks every target concurrently (one slow target does not hide the others) and stamps each verdict
 * with how long its own check took, for the per-target duration gauge (src/service/observe/provider-checks.ts).
 * A verdict that already carries `durationMs` keeps it.
 */
export function checkEach<T>(
    targets: readonly T[],
    check: (target: T, index: number) => Promise<CheckVerdict>,
): Promise<CheckVerdict[]> {
    return Promise.all(
        targets.map(async (t, i) => {
            const t0 = performance.now();
            const v = await check(t, i);
            return v.durationMs === undefined ? { ...v, durationMs: performance.now() - t0 } : v;
        }),
    );
}
