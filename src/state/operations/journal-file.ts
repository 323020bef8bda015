import * as fs from "node:fs";
import * as path from "node:path";
import type { Operation } from "./operation";

/**
 * Where an OperationLog keeps its journal: the newest records, written whole on every change, read back
 * by the next process or leader (OperationLog.recover). Writes are fire-and-forget for the log's callers
 * (a change never waits for the journal); `flushed()` is the one place that waits, for a caller whose
 * next step must not happen before the record is kept (cluster/scale-queue.ts removes a queued request
 * only then).
 */
export interface JournalSink {
    /** The records last written; undefined when there are none or they cannot be read (nothing to recover). */
    read(): Promise<Operation[] | undefined>;
    /**
     * Keeps `ops` (the latest call wins). A sink that writes at once throws when it cannot (the change
     * then fails, as before the journal was a seam); one that writes later reports it through flushed().
     */
    write(ops: Operation[]): void;
    /** Resolves once every write so far is kept; rejects when the last one could not be. */
    flushed(): Promise<void>;
}

/**
 * The journal as a file of the process' EGRESS_HOME (`run/operations-<stack>.json`): one process, or
 * replicas sharing that home. Written at once (temporary file, then rename: a reader never sees half a
 * journal), so `flushed()` has nothing to wait for.
 */
export class FileJournal implements JournalSink {
    constructor(private readonly file: string) {}

    async read(): Promise<Operation[] | undefined> {
        try {
            return JSON.parse(fs.readFileSync(this.file, "utf8")) as Operation[];
        } catch {
            return undefined; // absent (a first start) or unreadable: nothing to recover
        }
    }

    write(ops: Operation[]): void {
        fs.mkdirSync(path.dirname(this.file), { recursive: true });
        const tmp = `${this.file}.tmp`;
        fs.writeFileSync(tmp, JSON.stringify(ops));
        fs.renameSync(tmp, this.file);
    }

    async flushed(): Promise<void> {
        // Written when write() returned.
    }
}
