import type { Logger } from "pino";
import type { MemberHistory } from "./decide";

/**
 * Where the repair back-off is kept beyond this process: the store with replicas (store-history.ts), so
 * a new leader honours what its predecessor decided. Both calls throw when the store cannot be reached.
 */
export interface HealHistoryStore {
    /** Every member's history as the leaders wrote it. */
    load(): Promise<Map<string, MemberHistory>>;
    /** Writes these members' histories; `null` forgets the member (it left the fleet). */
    write(changes: ReadonlyMap<string, MemberHistory | null>): Promise<void>;
}

/**
 * The reconcile loop's per-member memory across rounds (failures, back-off, last repair). Alone it is
 * this map and nothing else. With a store, every change is also written there (a write that fails is
 * kept and written again before the next round), and a replica that takes the lead replaces its map
 * with the store's before it decides: a failover keeps the back-off instead of retrying at once a member
 * whose repair keeps failing.
 */
export class HealHistory {
    private readonly map = new Map<string, MemberHistory>();
    /** Changes not written to the store yet (`null`: forget). */
    private readonly pending = new Map<string, MemberHistory | null>();
    /** Whether the map is the store's as of this leadership (always, without a store). */
    private loaded: boolean;
    /** The last store failure, so an outage is logged once. */
    private failing?: string;

    constructor(
        private readonly log: Logger,
        private readonly store?: HealHistoryStore,
    ) {
        this.loaded = !store;
    }

    get entries(): ReadonlyMap<string, MemberHistory> {
        return this.map;
    }

    get(id: string): MemberHistory | undefined {
        return this.map.get(id);
    }

    set(id: string, h: MemberHistory): void {
        this.map.set(id, h);
        this.changed(id, h);
    }

    /** Forgets members no longer in the fleet (here and in the store). */
    prune(present: ReadonlySet<string>): void {
        for (const id of [...this.map.keys()])
            if (!present.has(id)) {
                this.map.delete(id);
                this.changed(id, null);
            }
    }

    /** This replica does not lead (now): when it leads again, another may have written meanwhile. */
    release(): void {
        if (this.store) this.loaded = false;
    }

    /**
     * Before a leader's round decides: writes what waits, then (once per leadership) takes the store's
     * histories as its own. Returns why not when the store cannot be reached: deciding without the
     * back-off would retry at once what the last leader held back (and the engine's fence needs the
     * store anyway).
     */
    async ready(): Promise<string | undefined> {
        if (!this.store) return undefined;
        try {
            await this.flush();
            if (!this.loaded) {
                const stored = await this.store.load();
                this.map.clear();
                for (const [id, h] of stored) this.map.set(id, h);
                this.loaded = true;
            }
            if (this.failing) this.log.info("repair back-off is read and written in the store again");
            this.failing = undefined;
            return undefined;
        } catch (e) {
            return this.failed(e);
        }
    }

    private changed(id: string, h: MemberHistory | null): void {
        if (!this.store) return;
        this.pending.set(id, h);
        this.flush().catch((e) => this.failed(e));
    }

    /** Writes the pending changes; one changed again meanwhile stays pending. Commands on one connection keep their order. */
    private async flush(): Promise<void> {
        if (!this.store || !this.pending.size) return;
        const batch = new Map(this.pending);
        await this.store.write(batch);
        for (const [id, h] of batch) if (this.pending.get(id) === h) this.pending.delete(id);
    }

    private failed(e: unknown): string {
        const why = `repair back-off cannot be read or written in the store (${(e as Error).message}); no repairs until it can`;
        if (!this.failing) this.log.warn({ error: (e as Error).message }, why);
        this.failing = why;
        return why;
    }
}
