import { loadStackConfig } from "../config";
import type { StackDriver } from "../engine";
import { planRollouts } from "../service/control/rolling/plan";
import { UsageError } from "./context";

/**
 * `egress up` without `--all-at-once`: refuses an update that would replace members (their port, image,
 * cloud-init … changed), because the CLI does not roll changes in batches (the service does:
 * src/service/control/rolling) and replacing them together drops the pool to zero for a moment. A
 * stack without members yet has nothing to replace and pays no preview. Called by runEngine after its
 * preflight, under the writer lock and Ctrl-C's safe cancel. docs/operations.md.
 */
export async function refuseAllAtOnce(driver: StackDriver, projectRoot: string, stack: string): Promise<void> {
    const config = loadStackConfig(projectRoot, stack);
    if (!(await driver.membersInState()).length) return;
    const replaced = await driver.previewReplaced();
    if (!replaced.length) return;
    const pools = config.pools;
    let plans = "";
    try {
        const rollouts = planRollouts(replaced, Object.fromEntries(pools.map((p) => [p.name, p])));
        plans = rollouts.map((r) => `${r.pool}: ${r.batches.length} batches`).join(", ");
    } catch {
        /* a pool with no room to roll: the service would refuse it too */
    }
    throw new UsageError(
        `this update replaces ${replaced.join(", ")} all at once (their config changed); \`egress up\` does not roll changes in batches. ` +
            `Let the running service roll it (it rolls any update maxSurge members at a time${plans ? `, here ${plans}` : ""}: ` +
            "e.g. `egress scale <pool> <its current count>`), or pass --all-at-once to replace them together.",
    );
}
