/**
 * What a targeted repair of members touches, read from state: each member's component URN (the target;
 * with `targetDependents` its children come along) and the URNs of the custom resources under it
 * (replaced: a component has nothing to replace). Pure, over a checkpoint's or an export's resources.
 */
import { memberComponents, type StateResource, urnName } from "./state";

export type { StateResource } from "./state";

export interface MemberTargets {
    /** Member id → its component URN and the custom resources below it (any depth). */
    found: Map<string, { component: string; replace: string[] }>;
    /** Ids with no member component in state (removed meanwhile, e.g. by a scale-down). */
    missing: string[];
}

export function memberTargets(resources: readonly StateResource[], ids: readonly string[]): MemberTargets {
    const live = resources.filter((r) => !r.delete);
    const children = new Map<string, StateResource[]>();
    for (const r of live) if (r.parent) children.set(r.parent, [...(children.get(r.parent) ?? []), r]);
    const found = new Map<string, { component: string; replace: string[] }>();
    const missing: string[] = [];
    const members = memberComponents(live);
    for (const id of ids) {
        const comp = members.find((r) => urnName(r.urn) === id);
        if (!comp) {
            missing.push(id);
            continue;
        }
        const replace: string[] = [];
        const walk = (urn: string) => {
            for (const c of children.get(urn) ?? []) {
                if (c.custom) replace.push(c.urn);
                walk(c.urn);
            }
        };
        walk(comp.urn);
        found.set(id, { component: comp.urn, replace });
    }
    return { found, missing };
}
