import type * as http from "node:http";
import type { RequestHead } from "./framing";

/**
 * Which gateway requests may be sent again to another member (issue 21's retries). A request is only
 * replayed when the gateway still holds all of it: no body at all, or a small body it read whole before
 * the first attempt. A streamed body went (in part) to the failed member and is gone; a body of a
 * non-idempotent method (POST, PATCH) might have acted at the origin before the member failed, so
 * sending it twice could do twice what the client asked once (RFC 9110 §9.2.2).
 */

/** The largest body read whole so that its request can be replayed: bigger ones stream, never replayed. */
export const MAX_REPLAY_BODY = 64 * 1024;

/** RFC 9110 §9.2.2: methods whose effect is the same however often they are sent. */
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]);

/**
 * `empty`: no body (no Content-Length or 0, no Transfer-Encoding), replayable whatever the method — a
 * member that failed before answering sent nothing to act on. `buffer`: an idempotent method with a
 * Content-Length of at most MAX_REPLAY_BODY, read whole first. `stream`: anything else, never replayed.
 */
/** Whether `method` is idempotent: only such a request is sent again after an origin saw it (a block retry). */
export function isIdempotent(method: string | undefined): boolean {
    return IDEMPOTENT.has((method ?? "").toUpperCase());
}

export type Replay = "empty" | "buffer" | "stream";

export function replayOf(method: string | undefined, headers: http.IncomingHttpHeaders): Replay {
    // A chunked body has no length to bound in advance: streamed.
    if (headers["transfer-encoding"] !== undefined) return "stream";
    const length = headers["content-length"];
    if (length === undefined || /^0+$/.test(length)) return "empty";
    if (!/^\d{1,6}$/.test(length) || Number(length) > MAX_REPLAY_BODY) return "stream";
    return isIdempotent(method) ? "buffer" : "stream";
}

/** The same for a head the framing layer read (its framing checked: one length, or chunked). */
export function replayOfHead(head: RequestHead): Replay {
    const f = head.framing;
    if (f.kind === "chunked") return replayOf(head.method, { "transfer-encoding": "chunked" });
    return replayOf(head.method, f.kind === "length" ? { "content-length": String(f.length) } : {});
}
