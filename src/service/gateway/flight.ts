import type { EventEmitter } from "node:events";
import type { Socket } from "node:net";
import type { Admitted } from "./admission";

/** What the gateway keeps about one request or tunnel while it is in flight, and what it marks on sockets. */

/** Per-request state: what the release needs to know about how the request or tunnel went. */
export interface Flight extends Admitted {
    kind: "http" | "connect";
    /** performance.now() at launch, in ms. */
    startedAt: number;
    /** What closes when the request or tunnel is over (the answer, or the tunnel's socket): its lease then goes back. */
    closes: EventEmitter;
    socket: Socket;
    read0: number;
    written0: number;
    status?: number;
    rawHeaders?: string[];
    /** The whole answer reached the client (http). */
    complete?: boolean;
    tunnel: "open" | "refused" | "none";
    cut?: NodeJS.Timeout;
    /**
     * The member failed it before answering (refused, reset, timed out): the gateway answered 502/504,
     * so the client closing afterwards is not what ended it.
     */
    memberFailed?: boolean;
    /** The gateway itself cut it (lease TTL, shutdown): not the member's fault. */
    cutByGateway?: boolean;
    ended: boolean;
    /** Which attempt of its request this is (1 = the first; retries.ts makes the others). */
    attempt: number;
    /** The members of this attempt and the ones before it: the next attempt leases none of them. */
    tried: string[];
    /** The request can go to another member if this attempt fails before its answer (replay.ts; CONNECT: until open). */
    replayable: boolean;
    /** A replayable plain request's body, sent whole to each member; undefined = stream the client's. */
    body?: Buffer;
    /** How many of the attempts before this one were retried because the origin blocked them (`gateway.retryOnBlock`). */
    blockRetries: number;
    /** Ended because another member took the request over, for this reason (retries.ts). */
    retriedFor?: string;
    /** The retry's acquire ended this attempt's lease already (AcquireRequest.replaces): end() releases nothing. */
    handedOver?: boolean;
}

/** The retry reason of an attempt the origin blocked (`gateway.retryOnBlock`); the others are member failures. */
export const BLOCKED = "blocked";

export const CLIENT_GONE = Symbol("egress.gateway.clientGone");
/** Byte counts of the connection where its previous request ended, so the next one counts its own head. */
export const MARK = Symbol("egress.gateway.mark");
export type TaggedSocket = Socket & { [CLIENT_GONE]?: boolean; [MARK]?: { read: number; written: number } };

/** Marks a client's socket: gone once it ended or failed. */
export function tagClient(s: TaggedSocket): void {
    const gone = () => {
        s[CLIENT_GONE] = true;
    };
    s.once("end", gone);
    s.once("error", gone);
    s.on("error", () => undefined);
}
