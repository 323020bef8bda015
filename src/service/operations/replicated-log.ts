import type Redis from "ioredis";
import type { Logger } from "pino";
import { OperationLog } from "../../state/operations/journal";
import { StoreEvents } from "../../state/operations/store-events";
import { StoreJournal } from "../../state/operations/store-journal";

export interface OperationLogOptions {
    /** The journal file of this home (`run/operations-<stack>.json`). */
    journalFile: string;
    /** With replicas: the store, the stack's key prefix and this replica's id (cluster.ts `Cluster.id`). */
    store?: { url: string; prefix: string; self: string; log: Logger; redis?: Redis };
}

/**
 * The operation log of one process (its journal a file of this home), or of replicas: journal and event
 * streams in the store, so the next leader takes over what this one recorded, and every replica streams
 * every operation, from any host (store-journal.ts, store-events.ts). A replica writes to the store only
 * while it leads (start/leading.ts calls setWriter), so it starts as a reader.
 */
export function operationLog(o: OperationLogOptions) {
    if (!o.store) return { ops: new OperationLog(o.journalFile) };
    const journal = new StoreJournal({ ...o.store, legacyFile: o.journalFile });
    const events = new StoreEvents(o.store);
    const ops = new OperationLog(journal, events);
    ops.setWriter(false);
    return { ops, journal, events };
}
