import type * as http from "node:http";
import type { Socket } from "node:net";
import type { Admitted } from "./admission";

/** What the gateway keeps about one request or tunnel while it is in flight, and where it hangs it. */

/** Per-request state, hung on the request (and passed to proxy-chain as its customTag). */
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
    /** The gateway itself cut it (lease TTL, shutdown): not the member's fault. */
    cutByGateway?: boolean;
    ended: boolean;
}

export const FLIGHT = Symbol("egress.gateway.flight");
export const RESPONSE = Symbol("egress.gateway.response");
export const CLIENT_GONE = Symbol("egress.gateway.clientGone");
/** Byte counts of the connection where its previous request ended, so the next one counts its own head. */
export const MARK = Symbol("egress.gateway.mark");
export type Tagged = { [FLIGHT]?: Flight; [RESPONSE]?: http.ServerResponse };
export type TaggedSocket = Socket & { [CLIENT_GONE]?: boolean; [MARK]?: { read: number; written: number } };

/** Records the relayed status and headers (proxy-chain's forward writes them with writeHead) and completion. */
export function watchHead(res: http.ServerResponse, f: Flight, onHead: () => void): void {
    const writeHead = res.writeHead;
    res.writeHead = function (this: http.ServerResponse, ...args: unknown[]) {
        // forward() relays with (status, message, rawHeaders); its own error answers set statusCode and end().
        if (Array.isArray(args[2]) && f.status === undefined) {
            f.status = args[0] as number;
            f.rawHeaders = args[2] as string[];
            // Which member served it: for logs and for a client that reports blocks by member.
            args[2] = [...f.rawHeaders, "X-Egress-Proxy", f.lease.proxy.id];
            onHead();
        }
        return (writeHead as (...a: unknown[]) => http.ServerResponse).apply(this, args);
    } as typeof res.writeHead;
    res.once("finish", () => {
        f.complete = true;
    });
}
