/**
 * A targeted `up` of members (a heal, a scale, a rotation or rolling batch) whose members need a resource
 * that a change of config makes anew and that is not in state yet (KVM member templates: a kind's
 * `memberDependencyTypes`) fails in the engine before it changes anything: "Resource '<member>' depends on
 * '<template>' which was not specified in --target list". The driver then makes those resources in a run
 * that targets them alone, and runs the targeted `up` again (driver.ts `up`). Only what the engine named, and only of those types: anything
 * else the targeted run would create stays the error it is.
 */
import { memberDependencyTypes } from "../../components/registry";
import { urnName } from "./state";

/** The engine's diagnostic 2013 (sdk/go/common/diag/errors.go; its "was was" is the engine's own). */
const UNTARGETED_DEPENDENCY = /depends on '(urn:pulumi:[^']+)' which was(?: was)? not specified in --target list/g;

/** The type token of a URN: the last type of its parent chain (`…::<parent type>$<type>::<name>`). */
export function urnType(urn: string): string {
    const parts = urn.split("::");
    return (parts[2] ?? "").split("$").pop() ?? "";
}

/** The URNs of `types` that an engine error names as untargeted dependencies, each once. */
export function untargetedDependencies(
    message: string,
    types: ReadonlySet<string> = memberDependencyTypes(),
): string[] {
    const found = [...message.matchAll(UNTARGETED_DEPENDENCY)].map((m) => m[1]);
    return [...new Set(found.filter((urn) => types.has(urnType(urn))))];
}

/**
 * Runs `up(opts)`; when a targeted one fails on untargeted dependencies of `types`, makes those in a run
 * that targets them alone, then runs `opts` again. Alone and without their dependents: targeted together
 * with the members, `targetDependents` would take in every member the new config points at them (all of
 * the pool's), and replace it.
 */
export async function upMakingDependencies<O extends { target?: string[]; onProgress?: unknown }, R>(
    up: (opts: O) => Promise<R>,
    opts: O,
    onNotice: (line: string) => void,
): Promise<R> {
    try {
        return await up(opts);
    } catch (e) {
        const extra = opts.target ? untargetedDependencies((e as Error).message) : [];
        if (!extra.length) throw e;
        onNotice(
            `the targeted members need ${extra.length} resource(s) this config makes anew (${extra.map(urnName).join(", ")}); making them first`,
        );
        await up({ target: extra, refresh: false, onProgress: opts.onProgress } as unknown as O);
        return up(opts);
    }
}
