import type { ConfigProblem, Placement, PoolConfig } from "../../src/model";

/**
 * Runs a kind's placement rule on a pool's placement and on every member override's (merged over the
 * pool's), each problem naming its own path.
 */
export function eachPlacement(
    pool: PoolConfig,
    at: (...p: (string | number)[]) => string,
    check: (placement: Placement, at: string) => ConfigProblem[],
): ConfigProblem[] {
    const out = check(pool.placement, at("placement"));
    pool.members.forEach((m, j) => {
        if (m.placement) out.push(...check({ ...pool.placement, ...m.placement }, at("members", j, "placement")));
    });
    return out;
}
