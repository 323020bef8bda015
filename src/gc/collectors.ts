import * as path from "node:path";
import type { ProviderConfig, ProviderKind } from "../config";
import { localCollector } from "./local";
import { gcpCollector } from "./gcp";
import { kubernetesCollector } from "./kubernetes";
import type { Collector, CollectorFactory, ManagedThing } from "./types";

/** One collector per provider entry, by kind. `runDir` is where local proxies keep their files. */
export function collectorFor(providerName: string, entry: ProviderConfig, runDir: string): Collector {
    const factories: Record<ProviderKind, CollectorFactory<any>> = {
        local: localCollector(runDir),
        // Loaded on use: the KVM kind pulls in libvirt tooling checks nobody else needs.
        kvm: (...args: Parameters<CollectorFactory<any>>) => require("./kvm").kvmCollector(...args),
        gcp: gcpCollector,
        kubernetes: kubernetesCollector,
    };
    return factories[entry.type](providerName, entry);
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
