import type Redis from "ioredis";
import type { Logger } from "pino";
import { clusterConnection } from "../cluster/connection";
import { CLUSTER_KEYS } from "../cluster/records";
import { WRITE_JOURNAL } from "../cluster/scripts";
import { FileJournal, type JournalSink } from "./journal-file";
import type { Operation } from "./operation";

type Scripted = Redis & {
    egressWriteJournal(lock: string, journal: string, self: string, json: string): Promise<number>;
};

export interface StoreJournalOptions {
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
 * over what the last leader recorded (OperationLog.recover). Only the lock's holder writes (WRITE_JOURNAL).
 *
 * Writes never block the change that made them: the latest journal is sent, one write at a time, and a
 * newer one replaces one not sent yet. A write that fails (the store away) is retried every `retryMs`
 * until it lands or a newer one replaces it; a write refused because this replica no longer holds the
 * lock is dropped (the next leader's journal is the truth). `flushed()` waits for everything written so
 * far: the scale queue removes a request only once its record is kept (scale-queue.ts).
 */
export class StoreJournal implements JournalSink {
    private readonly redis: Scripted;
    private pending?: string;
    /** Count of write() calls, and the count whose journal was the last one kept. */
    private version = 0;
    private kept = 0;
    private writing?: Promise<void>;
    private lastError?: Error;
    private retry?: NodeJS.Timeout;
    private closed = false;
    private warned = false;

    constructor(private readonly o: StoreJournalOptions) {
        this.redis = clusterConnection(o.url) as Scripted;
        this.redis.defineCommand("egressWriteJournal", { numberOfKeys: 2, lua: WRITE_JOURNAL });
    }

    private get key(): string {
        return this.o.prefix + CLUSTER_KEYS.journal;
    }

    /** Throws while the store is away: a leader must not take over an empty journal it could not read. */
    async read(): Promise<Operation[] | undefined> {
        await this.connected();
        const raw = await this.redis.get(this.key);
        if (raw === null) return this.o.legacyFile ? new FileJournal(this.o.legacyFile).read() : undefined;
        try {
            const ops = JSON.parse(raw);
            return Array.isArray(ops) ? (ops as Operation[]) : undefined;
        } catch {
            this.o.log.error({ key: this.key }, "the operation journal in the store is not JSON; starting without it");
            return undefined;
        }
    }

    write(ops: Operation[]): void {
        this.pending = JSON.stringify(ops);
        this.version++;
        this.kick();
    }

    async flushed(): Promise<void> {
        const target = this.version;
        while (this.kept < target) {
            if (this.closed) throw new Error("the journal was closed before it was written");
            if (!this.writing) this.kick();
            await this.writing;
            if (this.kept < target && this.lastError) throw this.lastError;
        }
    }

    close(): void {
        this.closed = true;
        clearTimeout(this.retry);
        this.redis.disconnect();
    }

    /** Starts sending the pending journal unless a send runs (it sends the newest when it is done). */
    private kick(): void {
        if (this.writing || this.closed) return;
        clearTimeout(this.retry);
        this.writing = this.send().finally(() => (this.writing = undefined));
    }

    private async send(): Promise<void> {
        while (this.pending !== undefined && !this.closed) {
            const json = this.pending;
            const version = this.version;
            try {
                await this.connected();
                const written = await this.redis.egressWriteJournal(
                    this.o.prefix + CLUSTER_KEYS.leader,
                    this.key,
                    this.o.self,
                    json,
                );
                if (!written)
                    throw new Error("this replica no longer holds the stack's lock; the journal is the leader's");
                this.lastError = undefined;
                this.warned = false;
            } catch (e) {
                this.lastError = e as Error;
                const held = !/no longer holds/.test(this.lastError.message);
                if (held) {
                    // Once per outage, not once per retry.
                    if (!this.warned)
                        this.o.log.warn({ err: e }, "writing the operation journal to the store failed; retrying");
                    this.warned = true;
                    this.retry = setTimeout(() => this.kick(), this.o.retryMs ?? 1000);
                    this.retry.unref();
                } else if (this.version === version) this.pending = undefined; // dropped: not ours to write
                return;
            }
            // A newer journal written meanwhile is still pending: the loop sends it next.
            if (this.version === version) this.pending = undefined;
            this.kept = version;
        }
    }

    /** The connection is made on first use (nothing to do for a replica that never leads). */
    private async connected(): Promise<void> {
        if (this.redis.status === "wait") await this.redis.connect().catch(() => undefined);
    }
}
