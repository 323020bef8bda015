import type { Writable } from "node:stream";

/**
 * Puts the commands sent to one Redis connection during one event-loop turn into one socket write,
 * without waiting for earlier replies.
 *
 * ioredis' auto-pipelining also writes a turn's commands at once, but it sends a batch only after the
 * previous batch's replies are all back. Under 16 clients that turned the bench into a convoy: nearly
 * every batch held all 16 requests (1,078 of 1,924 batches in one run), so the bench client, the service
 * and Redis took turns instead of working at the same time, and every request waited out the batch
 * before its own. Corking the socket for the turn keeps the one write per turn and lets as many batches
 * be in flight as the turns produce. Replies still come back in order on the one connection.
 *
 * A write held here is a write ioredis has already queued its command for: a connection lost before the
 * turn ends fails those commands as any lost connection does, and the command timeout runs from when
 * the command was sent, so neither answer changes.
 */
export class TurnWrites {
    private corked = false;

    /** `stream`: the connection's socket now (ioredis replaces it on every reconnect), if there is one. */
    constructor(private readonly stream: () => Writable | undefined) {}

    /** Called before each command: the first of a turn holds the socket's writes until the turn's end. */
    hold(): void {
        if (this.corked) return;
        const s = this.stream();
        if (!s?.writable) return; // ioredis refuses the command itself (no offline queue)
        this.corked = true;
        s.cork();
        // setImmediate, not a microtask: the turn's other requests (read in the same poll phase) join.
        setImmediate(() => {
            this.corked = false;
            // The socket corked, even if ioredis has since moved to a new one; a destroyed one ignores it.
            s.uncork();
        });
    }
}
