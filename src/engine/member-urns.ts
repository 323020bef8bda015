/**
 * What a targeted repair of members touches, read from state: each member's component URN (the target;
 * with `targetDependents` its children come along) and the URNs of the custom resources under it
 * (replaced: a component has nothing to replace). Pure, over a checkpoint's or an export's resources.
 */
import { memberComponents, POOL_TYPE, type StateResource, urnName } from "./state";
import { memberName } from "../model";
import type { ProgramScope } from "../program";
import { type Deployment, membersOf, rootOutput } from "./checkpoint";

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

/**
 * Member id → epoch ms it was created, for rotation by age (src/service/control/rotate). No kind records a
 * creation time in its outputs, but the engine stamps every resource with `created` when it creates it,
 * and a replace creates the custom resources anew. A member's age is that of its oldest custom resource:
 * once a replace has renewed them all it reads new, while an update of one child (which keeps its stamp)
 * never makes it look younger. Members without stamps (state from older engines) are left out.
 */
export function memberCreatedAt(resources: readonly StateResource[]): Map<string, number> {
    const live = resources.filter((r) => !r.delete);
    const ids = memberComponents(live).map((r) => urnName(r.urn));
    const out = new Map<string, number>();
    for (const [id, t] of memberTargets(live, ids).found) {
        const stamps = live
            .filter((r) => t.replace.includes(r.urn))
            .map((r) => (r.created ? Date.parse(r.created) : NaN));
        if (stamps.length && stamps.every(Number.isFinite)) out.set(id, Math.min(...stamps));
    }
    return out;
}

/**
 * Members whose resources these URNs are (custom resources below a member component, or the component
 * itself): what a preview's replace steps mean for the fleet (driver.previewReplaced). URNs of no member
 * (a new member's, the pool's own) are left out. Sorted, each member once.
 */
export function membersOfUrns(resources: readonly StateResource[], urns: readonly string[]): string[] {
    const live = resources.filter((r) => !r.delete);
    const ids = memberComponents(live).map((r) => urnName(r.urn));
    const wanted = new Set(urns);
    const out: string[] = [];
    for (const [id, t] of memberTargets(live, ids).found)
        if (wanted.has(t.component) || t.replace.some((u) => wanted.has(u))) out.push(id);
    return out.sort();
}

/**
 * The component URNs members `ids` of the pool of `sibling` get (a sibling member's component URN with
 * its name swapped): a targeted `up` of new members (a rolling change's surge) names them before they
 * exist. Members of a pool share their parent chain, so only the last name part differs.
 */
export function siblingUrns(sibling: string, ids: readonly string[]): string[] {
    const cut = sibling.lastIndexOf("::");
    return ids.map((id) => `${sibling.slice(0, cut)}::${id}`);
}

/**
 * What an `up` that only changes pool counts touches (a scale, an autoscale step), read from state: per
 * pool in `desired`, the component URNs of the members it adds (named after a sibling, siblingUrns) and of
 * those it removes. With `targetDependents` their children come along, and nothing else is diffed, read
 * or written: the change costs the same whatever the fleet's size (docs/decisions/0078-targeted-scale.md, "a change costs
 * the same at any size"). Undefined when a pool that changes has no member in state to name new ones
 * after, or when nothing changes: the caller runs a plain `up`.
 */
export function countTargets(
    resources: readonly StateResource[],
    desired: Record<string, number>,
): string[] | undefined {
    const members = memberComponents(resources.filter((r) => !r.delete));
    const targets: string[] = [];
    for (const [pool, count] of Object.entries(desired)) {
        const mine = members.filter((r) => urnName(r.parent!) === pool);
        const wanted = new Set(Array.from({ length: count }, (_, i) => memberName(pool, i)));
        const have = new Set(mine.map((r) => urnName(r.urn)));
        const added = [...wanted].filter((id) => !have.has(id));
        if (added.length && !mine.length) return undefined;
        if (added.length) targets.push(...siblingUrns(mine[0].urn, added));
        targets.push(...mine.filter((r) => !wanted.has(urnName(r.urn))).map((r) => r.urn));
    }
    return targets.length ? targets : undefined;
}

/**
 * The member ids a targeted `up` names, when every target is a member component (a scale's added and
 * removed members, a heal's or rotation's replaced ones: `…::…$egress:index:ProxyPool$<kind>::<id>`);
 * undefined when any target is something else (the program then registers everything). With these, the
 * program registers only these members (ProgramScope): the engine keeps every untargeted resource as it
 * is in state whether or not the program registers it, so registering the others was work proportional
 * to the fleet's size for nothing.
 */
export function targetedMembers(targets: readonly string[]): Set<string> | undefined {
    const ids = new Set<string>();
    for (const urn of targets) {
        const chain = urn.split("::")[2]?.split("$") ?? [];
        if (chain.length < 2 || chain[chain.length - 2] !== POOL_TYPE) return undefined;
        ids.add(urnName(urn));
    }
    return ids.size ? ids : undefined;
}

/**
 * An `up` that targets member components and their dependents runs the program over those members only,
 * the others carried into the outputs from this run's state (program.ts ProgramScope). Anything else
 * runs it over everything.
 */
export function memberScope(
    opts: { target?: string[]; targetDependents?: boolean },
    dep: Deployment,
): ProgramScope | undefined {
    const members = opts.target && opts.targetDependents ? targetedMembers(opts.target) : undefined;
    const resources = dep.resources ?? [];
    const appliedConfig = rootOutput(resources, "appliedConfig");
    return members
        ? { members, carried: membersOf(resources), ...(appliedConfig ? { appliedConfig } : {}) }
        : undefined;
}
