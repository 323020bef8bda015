import * as path from "node:path";
import type { ManagedThing } from "../../components/kind";

/**
 * Whether state knows a thing: some resource ID in state is its name or ends with `/<name>`
 * (GCE IDs are paths; libvirt and Kubernetes IDs are names or namespace/name). An ID may name several
 * things, comma-separated: a Kubernetes member handed over from an earlier release, whose Service is
 * named apart from its Deployment (components/kubernetes/member-provider.ts). No kind's names hold a comma.
 */
export function knownToState(thing: ManagedThing, stateIds: Set<string>): boolean {
    if (stateIds.has(thing.name)) return true;
    for (const ids of stateIds)
        for (const id of ids.split(","))
            if (id === thing.name || id.endsWith(`/${thing.name}`) || path.basename(id) === thing.name) return true;
    return false;
}
