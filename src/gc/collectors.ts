import * as path from "node:path";
import type { ProviderConfig } from "../config";
import { kindOf } from "../../components/registry";
import type { Collector, ManagedThing } from "../../components/kind";

/**
 * One collector per provider entry, by kind; undefined for a kind that leaves nothing behind to collect.
 * `runDir` is where local proxies keep their files.
 */
export function collectorFor(
    providerName: string,
    entry: ProviderConfig,
    runDir: string,
    stack = "",
): Collector | undefined {
    return kindOf(entry).collector?.(providerName, entry, { runDir, stack });
}

/**
 * Whether state knows a thing: some resource ID in state is its name or ends with `/<name>`
 * (GCE IDs are paths; libvirt and Kubernetes IDs are names or namespace/name).
 */
export function knownToState(thing: ManagedThing, stateIds: Set<string>): boolean {
    if (stateIds.has(thing.name)) return true;
    for (const id of stateIds) if (id.endsWith(`/${thing.name}`) || path.basename(id) === thing.name) return true;
    return false;
}
