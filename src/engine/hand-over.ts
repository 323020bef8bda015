/**
 * Upgrades without replacing members: resources an earlier release kept in a shape this one no longer
 * writes are handed over by their kind (components/kind.ts HandOver: the live thing is marked for the new
 * shape to adopt), then dropped from state through export + import, as `pulumi state delete` would. The
 * next `up` creates the new shape, which adopts the marked thing: nothing is deleted, no member replaced.
 * Idempotent: a crash after the marking repeats it; one after the import leaves the adoption to any `up`.
 * Only the members the run registers are handed over (handOverBeforeUp).
 */
import type { Stack } from "@pulumi/pulumi/automation";
import { handOvers } from "../../components/registry";
import { type StateResource, urnName } from "./state";
import { loadStackConfig } from "../config";
import { memberName } from "../model";

/** Handed-over URN → the URN of the resource that takes it over (for an operation's targets). */
export type Successors = Map<string, string>;

/**
 * Hands over what `resources` hold of an earlier release's shapes; empty when there is none (the common
 * case, which costs one pass over the resources). Callers hold the writer lock, with no pending operation.
 */
export async function handOverEarlierShapes(
    stack: Stack,
    resources: readonly StateResource[],
    onNotice: (line: string) => void,
    keep: (member: string) => boolean = () => true,
): Promise<Successors> {
    const takers = handOvers();
    const old = resources.filter((r) => takers[r.type] && r.id && !r.delete && r.parent && keep(r.parent));
    const successors: Successors = new Map();
    if (!old.length) return successors;
    const providers = new Map(
        resources.filter((r) => r.type.startsWith("pulumi:providers:")).map((r) => [`${r.urn}::${r.id}`, r]),
    );
    const all = await stack.getAllConfig(); // decrypted: a kind's credentials may be secrets
    const config = (key: string) => all[key]?.value;
    for (const r of old) {
        const provider = r.provider ? providers.get(r.provider)?.inputs : undefined;
        const successor = await takers[r.type]({ urn: r.urn, id: r.id!, outputs: r.outputs ?? {} }, provider, config);
        if (successor) successors.set(r.urn, successor);
    }
    if (!successors.size) return successors;
    const exported = await stack.exportStack();
    const dep = exported.deployment as { resources?: StateResource[] };
    dep.resources = (dep.resources ?? [])
        .filter((r) => !successors.has(r.urn))
        .map((r) => withoutReferences(r, successors));
    await stack.importStack(exported);
    onNotice(
        `handed ${successors.size} resource(s) of an earlier release's shape over to ${new Set(successors.values()).size} of this release's; the next step adopts what runs, replacing nothing`,
    );
    return successors;
}

/** `r` without dependencies on dropped URNs. */
function withoutReferences(r: StateResource, dropped: Successors): StateResource {
    const keep = (urns: string[]) => urns.filter((u) => !dropped.has(u));
    return {
        ...r,
        ...(r.dependencies ? { dependencies: keep(r.dependencies) } : {}),
        ...(r.propertyDependencies
            ? {
                  propertyDependencies: Object.fromEntries(
                      Object.entries(r.propertyDependencies).map(([k, v]) => [k, keep(v)]),
                  ),
              }
            : {}),
    };
}

/**
 * handOverEarlierShapes before an `up`: true when state changed. The operation's URNs (`opts`, which its
 * run reads) then name the successors of what was handed over.
 */
export async function handOverBeforeUp(
    stack: Stack,
    resources: readonly StateResource[],
    opts: { target?: string[]; replace?: string[] },
    onNotice: (line: string) => void,
    wanted: () => ReadonlySet<string> | undefined,
): Promise<boolean> {
    // Only members this run registers: a targeted run's (the others stay as they are, and so does their
    // state), an untargeted run's those the config wants (an old member it drops is deleted by the
    // earlier shape's providers, which remain; handed over, nothing would delete what it runs). The
    // stack file is read only when state holds an earlier shape at all.
    let want: ReadonlySet<string> | undefined | null = null;
    const keep = opts.target
        ? (member: string) => opts.target!.includes(member)
        : (member: string) => {
              if (want === null) want = wanted();
              return !want || want.has(urnName(member));
          };
    const successors = await handOverEarlierShapes(stack, resources, onNotice, keep);
    if (!successors.size) return false;
    opts.target = succeeded(opts.target, successors);
    // A handed-over member is created anew (adopting only a domain that runs): nothing in state to replace.
    opts.replace = opts.replace?.filter((u) => !successors.has(u));
    return true;
}

/** An operation's URNs with each handed-over one named by its successor (each once). */
function succeeded(urns: string[] | undefined, successors: Successors): string[] | undefined {
    if (!urns || !successors.size) return urns;
    return [...new Set(urns.map((u) => successors.get(u) ?? u))];
}

/** The members the stack file (or the driver's pool counts, when higher) wants; undefined when it cannot be read. */
export function wantedMembers(
    workDir: string,
    stack: string,
    counts: Readonly<Record<string, number>>,
): Set<string> | undefined {
    try {
        return new Set(
            loadStackConfig(workDir, stack).pools.flatMap((p) =>
                Array.from({ length: Math.max(p.replicas, counts[p.name] ?? 0) }, (_, i) => memberName(p.name, i)),
            ),
        );
    } catch {
        return undefined; // the program's own load says what is wrong with it
    }
}
