import { createLogger } from "../log/logger";
import { stackPrefix } from "../state/cluster/records";
import type { Operation } from "../state/operations/operation";
import { StoreJournal } from "../state/operations/store-journal";
import { StoreEvents } from "../state/operations/store-events";
import type { ProgressEvent } from "../engine";
import { StoreUnavailableError } from "../state/redis/unavailable";

const SETTLED = new Set<Operation["status"]>(["succeeded", "failed", "interrupted"]);

export interface FollowOptions {
    /** Each status the operation is seen in, once (queued, running, …). */
    onStatus?: (op: Operation) => void;
    /** The engine's progress events, from the operation's stream in the store (src/state/operations/store-events.ts). */
    onProgress?: (e: ProgressEvent) => void;
    /** @default 500 */
    pollMs?: number;
    /** How long the store may be away before the command gives up following (exit 75). @default 30000 */
    storeGraceMs?: number;
}

/**
 * Follows an operation that the replica leading `stack` applies, through the store's copy of its
 * operation journal (src/state/operations/store-journal.ts) until it settles: the CLI needs no API
 * token and no route to the leader, only the store its request went through. The id may be the
 * operation's or that of a request folded into it (`requestIds`), and the operation may pass from a
 * leader that dies to the next one (a queued request is carried under its id). The operation goes on
 * whatever happens to this command; it only stops watching.
 */
export async function followInStore(url: string, stack: string, id: string, o: FollowOptions = {}): Promise<Operation> {
    const at = {
        url,
        prefix: stackPrefix(stack),
        self: `cli:${process.pid}`, // never writes: it holds no lock
        log: createLogger({ level: "silent" }),
    };
    const journal = new StoreJournal(at);
    const events = o.onProgress && new StoreEvents(at);
    let lastEvent = 0;
    const pollMs = o.pollMs ?? 500;
    let shown: string | undefined;
    let seen = false;
    let failingSince: number | undefined;
    try {
        for (;;) {
            let ops: Operation[] | undefined;
            try {
                ops = (await journal.read()) ?? [];
                failingSince = undefined;
            } catch (e) {
                failingSince ??= Date.now();
                if (Date.now() - failingSince > (o.storeGraceMs ?? 30_000))
                    throw new StoreUnavailableError(
                        `lost the store while following operation ${id} (${(e as Error).message}); the leader applies it all the same: GET /v1/operations/${id} on any replica follows it`,
                        2,
                    );
            }
            const op = ops?.find((x) => x.id === id || x.requestIds?.includes(id));
            // Progress before the status that follows it; a stream that cannot be read now is read next round.
            const entries = op && events ? await events.read(op.id, lastEvent).catch(() => []) : [];
            for (const e of entries) {
                lastEvent = e.id;
                if (e.type === "progress") o.onProgress!(e.data as ProgressEvent);
            }
            if (op && op.status !== shown) {
                shown = op.status;
                o.onStatus?.(op);
            }
            if (op && SETTLED.has(op.status)) return op;
            // The journal keeps the newest operations only: one that left it cannot be followed further.
            if (ops && !op && seen)
                throw new Error(
                    `operation ${id} left the store's journal (it keeps the newest operations) before this command saw it settle; GET /v1/operations on a replica shows what ran`,
                );
            seen ||= op !== undefined;
            await new Promise((r) => setTimeout(r, pollMs));
        }
    } finally {
        journal.close();
        events?.close();
    }
}
