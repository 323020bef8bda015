import type { Socket } from "node:net";
import type { Admitted } from "./admission";

/** What the gateway keeps about one request or tunnel while it is in flight, and what it marks on sockets. */

/** Per-request state: what the release needs to know about how the request or tunnel went. */
export interface Flight extends Admitted {
    kind: "http" | "connect";
    startedAt: bigint;
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
}

export const CLIENT_GONE = Symbol("egress.gateway.clientGone");
/** Byte counts of the connection where its previous request ended, so the next one counts its own head. */
export const MARK = Symbol("egress.gateway.mark");
export type TaggedSocket = Socket & { [CLIENT_GONE]?: boolean; [MARK]?: { read: number; written: number } };
