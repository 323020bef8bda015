import type Redis from "ioredis";
import type { Logger } from "pino";
import { FencedWrites } from "../cluster/fenced-writes";
import { CLUSTER_KEYS } from "../cluster/records";
import { FileJournal, type JournalSink } from "./journal-file";
import type { Operation } from "./operation";

export interface StoreJournalOptions {
    /** The replica's shared connection (cluster/connection.ts partConnection); unset, its own. */
    redis?: Redis;
    url: string;
    /** The stack's key prefix (`egress:<stack>:`). */
    prefix: string;
    /** This replica's id (cluster.ts `Cluster.id`): only the lock's holder writes. */
    self: string;
    log: Logger;
    /**
     * The journal file replicas kept in their shared EGRESS_HOME before the journal moved to the store:
     * read once while the store has none, so requests queued across the upgrade are carried, not lost.
     */
    legacyFile?: string;
    /** How soon a write that failed (the store away) is tried again. @default 1000 */
    retryMs?: number;
}

/**
 * The operation journal of a stack's replicas, in the store (`<prefix>journal`, the newest records as one
 * JSON value) instead of a file of one EGRESS_HOME: whichever replica leads next, on whatever host, takes
 * over what the last leader recorded (OperationLog.recover). Only the lock's holder writes, in the
 * background, the newest journal first (cluster/fenced-writes.ts); `flushed()` waits for everything
 * written so far: the scale queue removes a request only once its record is kept (scale-queue.ts).
 */
export class StoreJournal implements JournalSink {
    private readonly writes: FencedWrites;

    constructor(private readonly o: StoreJournalOptions) {
        this.writes = new FencedWrites({ ...o, key: CLUSTER_KEYS.journal, what: "the operation journal" });
    }

    /** Throws while the store is away: a leader must not take over an empty journal it could not read. */
    async read(): Promise<Operation[] | undefined> {
        const raw = await this.writes.read();
        if (raw === null) return this.o.legacyFile ? new FileJournal(this.o.legacyFile).read() : undefined;
        try {
            const ops = JSON.parse(raw);
            return Array.isArray(ops) ? (ops as Operation[]) : undefined;
        } catch {
            this.o.log.error(
                { key: this.writes.key },
                "the operation journal in the store is not JSON; starting without it",
            );
            return undefined;
        }
    }

    write(ops: Operation[]): void {
        this.writes.write(JSON.stringify(ops));
    }

    flushed(): Promise<void> {
        return this.writes.flushed();
    }

    close(): void {
        this.writes.close();
    }
}
