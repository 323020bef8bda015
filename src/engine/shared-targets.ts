/**
 * A targeted `up` of members (a heal, a scale, a rotation or rolling batch) whose members need a resource
 * that a change of config makes anew and that is not in state yet (KVM member templates: a kind's
 * `memberDependencyTypes`) fails in the engine before it changes anything: "Resource '<member>' depends on
 * '<template>' which was not specified in --target list". The driver then makes those resources in a run
 * that targets them alone, and runs the targeted `up` again (driver.ts `up`). Only what the engine named, and only of those types: anything
 * else the targeted run would create stays the error it is.
 */
import { memberDependencyTypes } from "../../components/registry";

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
