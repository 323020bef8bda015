import { EventEmitter } from "node:events";
import * as crypto from "node:crypto";
import type { ProgressEvent } from "../../engine";
import { findOperation, type Operation } from "./operation";
import { FileJournal, type JournalSink } from "./journal-file";

export type { JournalSink } from "./journal-file";

/** One message of an operation's event stream; `id` counts up from 1 per operation (the SSE `id:`). */
export interface StreamEntry {
    id: number;
    type: "progress" | "status";
    data: unknown;
}

/**
 * Where the writer also publishes its operations' stream entries, for every replica to stream
 * (operations/store-events.ts): `n` is the entry's number in this process.
 */
export interface EventSink {
    append(op: string, n: number, type: StreamEntry["type"], data: unknown): void;
}

/** What a leader takes over from the journal (OperationLog.recover). */
export interface Recovered {
    /** Cut off by the stop: they ran (or were queued work the loops decide again: heal, rotate, autoscale). */
    interrupted: Operation[];
    /**
     * Scale requests answered 202 that never started: still `queued`, for the new leader to apply under
     * their ids (Scaler.carry), so a stop between the answer and the start loses no request.
     */
    carried: Operation[];
}

/** Operations the journal keeps (the newest): enough for a new leader's recovery and recent lookups. */
export const JOURNAL_KEEP = 50;

/** Stream entries kept per operation for `Last-Event-ID` resume; older ones are dropped first. */
export const STREAM_BUFFER = 1000;

/**
 * Operations of one stack: records, their progress events (for SSE), and a journal (a file of the
 * process' EGRESS_HOME, or with replicas a key in the store: journal-file.ts, operations/store-journal.ts) so
 * a restart, or the next leader, can tell that an operation was interrupted by a crash.
 */
export class OperationLog {
    private readonly ops = new Map<string, Operation>();
    private readonly progressOf = new Map<string, ProgressEvent[]>();
    private readonly streams = new Map<string, { next: number; entries: StreamEntry[] }>();
    readonly emitter = new EventEmitter();
    private readonly keep = 200;
    /** Only the stack's leader writes the journal: a follower's view is stale (setWriter). */
    private writer = true;

    private readonly journal?: JournalSink;

    /**
     * `journal`: a file path (one process, or replicas sharing a home), or a sink such as the store's.
     * `events`: with replicas, the store's streams, which every replica's SSE reads.
     */
    constructor(
        journal?: string | JournalSink,
        private readonly events?: EventSink,
    ) {
        this.emitter.setMaxListeners(0);
        this.journal = typeof journal === "string" ? new FileJournal(journal) : journal;
    }

    /**
     * Resolves once the journal holds every change made so far (a file's writes are done when they
     * return; the store's may be in flight); rejects when the store could not take them (they are written
     * again with the next change, or the sink's retry).
     */
    async flushed(): Promise<void> {
        await this.journal?.flushed();
    }

    /** A new queued operation; `id` when a follower already answered with one (cluster/scale-queue.ts). */
    create(kind: Operation["kind"], desired: Record<string, number>, id?: string): Operation {
        const op: Operation = {
            id: id ?? `op_${crypto.randomBytes(8).toString("hex")}`,
            kind,
            status: "queued",
            desired,
            requests: 1,
            createdAt: new Date().toISOString(),
        };
        this.ops.set(op.id, op);
        this.progressOf.set(op.id, []);
        this.record(op, "status", op);
        this.trim();
        // On disk at once: a request answered 202 and cut off before it started is carried over (recover).
        this.writeJournal();
        return op;
    }

    /**
     * Whether this process writes the journal: a replica that stops leading stops writing, so an operation
     * of its own that settles later cannot overwrite what the new leader recorded (a stale `queued` there
     * would be carried over again by the leader after that).
     */
    setWriter(on: boolean): void {
        this.writer = on;
    }

    /**
     * `from` (a carried request) joined the queued operation `into` (Scaler.carry): its ids now find
     * `into`, and its own record is gone, so no `queued` record is left behind that never runs.
     */
    fold(from: Operation, into: Operation): void {
        if (from.id === into.id) return;
        const ids = new Set([...(into.requestIds ?? []), from.id, ...(from.requestIds ?? [])]);
        this.ops.delete(from.id);
        this.progressOf.delete(from.id);
        this.streams.delete(from.id);
        this.update(into, { requests: into.requests + from.requests, requestIds: [...ids] });
    }

    /** By its id, or by the id of a follower's request folded into it. */
    get(id: string): Operation | undefined {
        return this.ops.get(id) ?? findOperation([...this.ops.values()], id);
    }

    list(): Operation[] {
        return [...this.ops.values()];
    }

    eventsOf(id: string): ProgressEvent[] {
        return this.progressOf.get(id) ?? [];
    }

    progress(op: Operation, e: ProgressEvent): void {
        this.progressOf.get(op.id)?.push(e);
        this.emitter.emit(op.id, this.record(op, "progress", e));
    }

    update(op: Operation, patch: Partial<Operation>): void {
        Object.assign(op, patch);
        this.emitter.emit(op.id, this.record(op, "status", op));
        this.writeJournal();
    }

    /**
     * Takes the journal over (at start, or when this replica becomes the stack's leader). Of what the
     * previous process or leader left unfinished, scale requests that never started are carried (they stay
     * `queued`), unless an operation created after them started: then they are stale, since operations
     * start in the order they were created. Everything else unfinished is marked interrupted. The file is
     * the truth for every operation but the ones still running here (a replica that leads again while its
     * own last operation finishes).
     */
    async recover(): Promise<Recovered> {
        const out: Recovered = { interrupted: [], carried: [] };
        const previous = await this.journal?.read();
        if (!previous) return out;
        const setsCounts = (o: Operation) => o.kind === "scale" || o.kind === "up" || o.kind === "autoscale";
        const startedAfter = (op: Operation) =>
            previous.some((o) => setsCounts(o) && o.createdAt > op.createdAt && o.status !== "queued");
        for (const op of previous) {
            if (this.ops.get(op.id)?.status === "running") continue;
            const was = op.status;
            // Started, but cut off while it waited for the writer lock: it applied nothing (not even the
            // stack file), so it is still only a request.
            if (op.status === "running" && op.waitingForLock && op.kind === "scale")
                Object.assign(op, { status: "queued", startedAt: undefined, waitingForLock: undefined });
            if (op.status === "queued" && op.kind === "scale" && !startedAfter(op)) out.carried.push(op);
            else if (op.status === "running" || op.status === "queued") {
                op.status = "interrupted";
                op.finishedAt = new Date().toISOString();
                op.error = "the service stopped before this operation finished";
                out.interrupted.push(op);
            }
            this.ops.set(op.id, op);
            this.progressOf.set(op.id, []);
            // Only a change goes to the store's stream: it holds the op's history already.
            this.record(op, "status", op, op.status !== was);
        }
        // Requests this replica set aside when it last stepped down, which another leader has since applied
        // or folded (they are gone from the file): the file's records answer for them now.
        const inFile = new Set(previous.map((o) => o.id));
        for (const [id, op] of this.ops) if (op.status === "queued" && !inFile.has(id)) this.ops.delete(id);
        this.writeJournal();
        return out;
    }

    /** Stream entries of `id` after `afterId` (all with 0), oldest first, as far as the buffer reaches back. */
    streamOf(id: string, afterId = 0): StreamEntry[] {
        return (this.streams.get(id)?.entries ?? []).filter((e) => e.id > afterId);
    }

    /**
     * Numbers and buffers one stream message, and publishes it (`publish`) while this process writes.
     * Status data is a copy: the live record keeps changing.
     */
    private record(op: Operation, type: StreamEntry["type"], data: unknown, publish = true): StreamEntry {
        let s = this.streams.get(op.id);
        if (!s) this.streams.set(op.id, (s = { next: 1, entries: [] }));
        const entry: StreamEntry = { id: s.next++, type, data: type === "status" ? structuredClone(data) : data };
        s.entries.push(entry);
        if (s.entries.length > STREAM_BUFFER) s.entries.splice(0, s.entries.length - STREAM_BUFFER);
        if (publish && this.writer) this.events?.append(op.id, entry.id, type, entry.data);
        return entry;
    }

    private trim(): void {
        for (const id of this.ops.keys()) {
            if (this.ops.size <= this.keep) break;
            const op = this.ops.get(id)!;
            if (op.status === "queued" || op.status === "running") continue;
            this.ops.delete(id);
            this.progressOf.delete(id);
            this.streams.delete(id);
        }
    }

    private writeJournal(): void {
        if (!this.journal || !this.writer) return;
        this.journal.write(this.list().slice(-JOURNAL_KEEP));
    }
}
