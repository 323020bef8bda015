import { kindOf } from "../../components/registry";
import type { GoneCheck, GoneCheckContext } from "../../components/kind";

export type { GoneCheck, GoneCheckContext } from "../../components/kind";

/**
 * The entry's liveness hook (its kind's `goneCheck`, built with default client options: credentials and
 * endpoints from the entry and the environment, as the provider checkers). A kind without one is repaired
 * only after staying unhealthy for its pool's `replaceUnhealthyAfterSeconds`.
 */
export function goneCheckFor(ctx: GoneCheckContext): GoneCheck | undefined {
    const kind = kindOf(ctx.entry);
    return kind.goneCheck?.(ctx as GoneCheckContext<any>);
}
