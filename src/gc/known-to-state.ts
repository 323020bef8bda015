import * as path from "node:path";
import type { ManagedThing } from "../../components/kind";

/**
 * Whether state knows a thing: some resource ID in state is its name or ends with `/<name>`
 * (GCE IDs are paths; libvirt and Kubernetes IDs are names or namespace/name).
 */
export function knownToState(thing: ManagedThing, stateIds: Set<string>): boolean {
    if (stateIds.has(thing.name)) return true;
    for (const id of stateIds) if (id.endsWith(`/${thing.name}`) || path.basename(id) === thing.name) return true;
    return false;
}
