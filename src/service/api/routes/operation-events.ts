import type { Request, Response } from "express";
import type { AppDeps } from "../deps";
import type { StreamEntry } from "../../../state/operations/journal";
import type { Operation } from "../../../state/operations/operation";

/** Default time between `: ping` comments on an idle event stream (proxies and browsers drop silent connections). */
export const SSE_HEARTBEAT_MS = 15_000;
/** How often a replica reads the store's stream of an operation that is still running. */
export const STORE_POLL_MS = 250;
/** Every this many empty reads, a replica asks the journal whether the operation settled meanwhile. */
const RECHECK_EVERY = 20;
/** The same while nothing was streamed yet (a queued request may be folded into another operation). */
const RECHECK_QUEUED = 4;

const settled = (status: unknown) => status !== "queued" && status !== "running";

/** An SSE writer with its `: ping` comments, ended once by whichever comes first: the end or the client leaving. */
function sseWriter(req: Request, res: Response, heartbeatMs: number) {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    let open = true;
    const ping = setInterval(() => res.write(": ping\n\n"), heartbeatMs);
    const cleanups: (() => void)[] = [() => clearInterval(ping)];
    const close = () => {
        if (!open) return;
        open = false;
        for (const c of cleanups) c();
    };
    req.on("close", close);
    return {
        isOpen: () => open,
        onClose: (c: () => void) => cleanups.push(c),
        // `event:` first: existing readers pick blocks by their first line. No `id:` for a status the
        // stream itself does not hold (see streamFromStore): the client's Last-Event-ID stays as it was.
        send: (type: StreamEntry["type"], data: unknown, id?: number) =>
            res.write(`event: ${type}\n${id === undefined ? "" : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`),
        end: () => {
            close();
            res.end();
        },
    };
}

/**
 * One process (no store): replays the buffer after the client's last event (everything for a new client),
 * then follows live until the operation settles. Replay and subscribe run in one tick, so nothing falls
 * between them.
 */
export function streamFromMemory(deps: AppDeps, op: Operation, after: number, req: Request, res: Response): void {
    const sse = sseWriter(req, res, deps.sseHeartbeatMs ?? SSE_HEARTBEAT_MS);
    for (const e of deps.ops.streamOf(op.id, after)) sse.send(e.type, e.data, e.id);
    if (settled(op.status)) return sse.end();
    const listener = (e: StreamEntry) => {
        sse.send(e.type, e.data, e.id);
        if (e.type === "status" && settled(op.status)) sse.end();
    };
    deps.ops.emitter.on(op.id, listener);
    sse.onClose(() => deps.ops.emitter.off(op.id, listener));
}

/**
 * With replicas (deps.opEvents): every replica, leader or not, streams the store's copy
 * (src/state/operations/store-events.ts), read every STORE_POLL_MS until a status entry says the operation settled.
 * A client connected to a follower keeps its stream through a failover, and one that reconnects elsewhere
 * with `Last-Event-ID` picks up there, with the next leader's `interrupted` numbered on. A request still
 * queued streams too: its entries come once the leader takes it, or those of the operation it was folded
 * into (found through the journal's `requestIds`).
 *
 * A record that settled without its entry in the stream (expired after a day, written before this
 * release, or lost with a leader killed between journal and stream) is sent once as a `status` event
 * without an `id:`, and the stream ends; the journal's record is checked every RECHECK_EVERY empty reads.
 * While the store is away the stream waits, with its pings, and goes on when it is back.
 */
export function streamFromStore(deps: AppDeps, asked: Operation, after: number, req: Request, res: Response): void {
    const events = deps.opEvents!;
    const sse = sseWriter(req, res, deps.sseHeartbeatMs ?? SSE_HEARTBEAT_MS);
    const pollMs = deps.ssePollMs ?? STORE_POLL_MS;
    let op = asked;
    let timer: NodeJS.Timeout | undefined;
    sse.onClose(() => clearTimeout(timer));
    let empty = 0;
    let sent = 0;
    /** Whether the stream is over: it ended with a settled status, or `now` settled without one to come. */
    const over = async (now: Operation): Promise<boolean> => {
        if (!settled(now.status)) return false;
        const last = sent === 0 && after > 0 ? await events.last(now.id) : undefined;
        // A client resuming after the end has had it; anyone else gets the record's final status.
        if (!(last?.type === "status" && settled((last.data as Operation).status))) sse.send("status", now);
        return true;
    };
    const poll = async (): Promise<void> => {
        try {
            const entries = await events.read(op.id, after);
            if (!sse.isOpen()) return;
            for (const e of entries) {
                sse.send(e.type, e.data, e.id);
                after = e.id;
                sent++;
                if (e.type === "status" && settled((e.data as Operation).status)) return sse.end();
            }
            empty = entries.length ? 0 : empty + 1;
            const first = empty === 1 && sent === 0;
            const every = sent === 0 ? RECHECK_QUEUED : RECHECK_EVERY;
            if (first || (empty > 0 && empty % every === 0)) {
                const now = first ? op : await deps.storedOperation?.(op.id);
                if (!sse.isOpen()) return;
                if (now && now.id !== op.id) {
                    op = now; // folded (its requestIds hold the asked id): stream the operation it joined
                    empty = 0;
                } else if (now && (await over(now))) return sse.end();
            }
        } catch {
            // The store away: try again next round (the pings keep the connection).
        }
        if (sse.isOpen()) timer = setTimeout(() => void poll(), pollMs);
    };
    void poll();
}
