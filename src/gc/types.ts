import type { OwnerScope } from "../model";

/** Something egress created, found by its labels/metadata (project, stack, pool, member). */
export interface ManagedThing {
    kind: string;
    provider: string;
    /** What sort of thing: `domain`, `volume`, `instance`, `address`, `firewall`, `deployment`, `service`, `secret`, `process`. */
    type: string;
    /** Provider-side name or ID, enough for `remove`. */
    name: string;
    /** Where it lives: host, zone or namespace. */
    location: string;
    pool?: string;
    member?: string;
}

/** Lists and removes managed things of one provider entry. */
export interface Collector {
    readonly provider: string;
    readonly kind: string;
    /**
     * Everything carrying labels for this project, stack and installation. A thing with our name but
     * another installation's id is never listed (and never removed): collectors skip it.
     */
    list(scope: OwnerScope): Promise<ManagedThing[]>;
    /** Removes one thing; succeeds when it is already gone. */
    remove(thing: ManagedThing): Promise<void>;
}

export type CollectorFactory<E = unknown> = (providerName: string, entry: E, options?: { endpoint?: string }) => Collector;
