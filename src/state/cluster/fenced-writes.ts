import type Redis from "ioredis";
import type { Logger } from "pino";
import { connectOnce, partConnection } from "./connection";
import { CLUSTER_KEYS } from "./records";
import { WRITE_IF_HOLDER } from "./scripts";
import { type CatalogueEntry, EXIT } from "../../model/error-catalogue";

type Scripted = Redis & {
    egressWriteIfHolder(lock: string, key: string, self: string, value: string): Promise<number>;
};

export interface FencedWritesOptions {
    /** The replica's shared connection (connection.ts partConnection); unset, this part opens its own. */
    redis?: Redis;
    url: string;
    /** The stack's key prefix (`egress:<stack>:`). */
    prefix: string;
    /** The key under the prefix this writes (CLUSTER_KEYS). */
    key: string;
    /** The lock holder id this writes as: a replica's (cluster.ts `Cluster.id`) or a command's (command-lock.ts). */
    self: string;
    log: Logger;
    /** What the value is, for the one warning per outage ("the operation journal"). */
    what: string;
    /** How soon a write that failed (the store away) is tried again. @default 1000 */
    retryMs?: number;
}

/**
 * One value of a stack's in the store that only the lock's holder may write (WRITE_IF_HOLDER): the
 * operation journal (operations/store-journal.ts), the desired counts (desired.ts). A holder cut off from
 * Redis, whose lock may be another's by now, can then never overwrite its successor's value.
 *
 * Writes never block the change that made them: the latest value is sent, one write at a time, and a
 * newer one replaces one not sent yet. A write that fails (the store away) is retried every `retryMs`
 * until it lands or a newer one replaces it; a write refused because this holder no longer holds the
 * lock is dropped (the next holder's value is the truth). `flushed()` waits for everything written so far.
 */
export class FencedWrites {
    readonly redis: Redis;
    /** Whether this part opened its connection (and closes it), or shares the replica's. */
    /** Disconnects the connection if this part opened its own (partConnection). */
    private readonly disconnectOwn: () => void;
    private pending?: string;
    /** Count of write() calls, and the count whose value was the last one kept. */
    private version = 0;
    private kept = 0;
    private writing?: Promise<void>;
    private lastError?: Error;
    private retry?: NodeJS.Timeout;
    private closed = false;
    private warned = false;

    constructor(private readonly o: FencedWritesOptions) {
        const c = partConnection(o);
        this.redis = c.redis;
        this.disconnectOwn = c.disconnectOwn;
        this.redis.defineCommand("egressWriteIfHolder", { numberOfKeys: 2, lua: WRITE_IF_HOLDER });
    }

    /** The full key written. */
    get key(): string {
        return this.o.prefix + this.o.key;
    }

    /** Reads the value as the store has it now (null: none); throws while the store is away. */
    async read(): Promise<string | null> {
        await this.connected();
        return this.redis.get(this.key);
    }

    write(value: string): void {
        this.pending = value;
        this.version++;
        this.kick();
    }

    /** Resolves once every value written so far is kept (or replaced by a kept newer one); rejects with why not. */
    async flushed(): Promise<void> {
        const target = this.version;
        while (this.kept < target) {
            if (this.closed) throw new Error(`${this.o.what} was closed before it was written`);
            if (!this.writing) this.kick();
            await this.writing;
            if (this.kept < target && this.lastError) throw this.lastError;
        }
    }

    close(): void {
        this.closed = true;
        clearTimeout(this.retry);
        this.disconnectOwn();
    }

    /** Starts sending the pending value unless a send runs (it sends the newest when it is done). */
    private kick(): void {
        if (this.writing || this.closed) return;
        clearTimeout(this.retry);
        this.writing = this.send().then((emptied) => {
            this.writing = undefined;
            // A value written after the loop's last look and before this ran is sent now, not at the next
            // write: on a connection shared with other parts, another part's reply in the same read can
            // resume a writer (the scaler starting the next operation) in between. A failed send waits for
            // its retry instead.
            if (emptied && this.pending !== undefined) this.kick();
        });
    }

    /** Sends pending values until none is left (true), or one fails (false: retried or dropped). */
    private async send(): Promise<boolean> {
        while (this.pending !== undefined && !this.closed) {
            const value = this.pending;
            const version = this.version;
            try {
                await this.connected();
                const written = await (this.redis as Scripted).egressWriteIfHolder(
                    this.o.prefix + CLUSTER_KEYS.leader,
                    this.key,
                    this.o.self,
                    value,
                );
                if (!written) throw new NotHolderError(this.o.what);
                this.lastError = undefined;
                this.warned = false;
            } catch (e) {
                this.lastError = e as Error;
                if (!(e instanceof NotHolderError)) {
                    // Once per outage, not once per retry.
                    if (!this.warned)
                        this.o.log.warn({ err: e }, `writing ${this.o.what} to the store failed; retrying`);
                    this.warned = true;
                    this.retry = setTimeout(() => this.kick(), this.o.retryMs ?? 1000);
                    this.retry.unref();
                } else if (this.version === version) this.pending = undefined; // dropped: not ours to write
                return false;
            }
            // A newer value written meanwhile is still pending: the loop sends it next.
            if (this.version === version) this.pending = undefined;
            this.kept = version;
        }
        return true;
    }

    /** The connection is made on first use (nothing to do for a replica that never leads). */
    private async connected(): Promise<void> {
        await connectOnce(this.redis);
    }
}

/** The write was refused: this holder no longer holds the stack's lock, so the value is the next holder's. */
export class NotHolderError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "NotHolderError" };
    }
    constructor(what: string) {
        super(`this process no longer holds the stack's lock; ${what} is the leader's`);
        this.name = "NotHolderError";
    }
}
