import type { EventEmitter } from "node:events";
import type { Socket } from "node:net";
import type { Logger } from "pino";
import { type Admission, type Refusal, refusal } from "./admission";
import { poolLabel, rawAnswer } from "./answers";
import type { Flight, TaggedSocket } from "./flight";
import type { Flights } from "./flights";
import type { Door } from "./doors";
import type { ProxyCredentials } from "./proxy-auth";
import { settle } from "../store/types";
import type { GatewayMetrics } from "../observe/gateway-metrics";

/**
 * The gateway's one way in, whichever front door a request came through (HTTP, CONNECT, SOCKS5): the
 * gateway is ready, the credentials are readable and admitted (admission.ts: token, username, a
 * lease), and the request's Flight is launched, its lease released when what `closes` closes.
 */

/** How a request is answered once it is admitted (`go`) or refused before any member was tried. */
export interface EntryAnswers {
    refuse(r: Refusal): void;
    go(f: Flight): void;
    /** A bug on the way: the front door's own answer (default: an HTTP 500 on the socket). */
    internal?(): void;
}

export class Entry {
    constructor(
        private readonly o: {
            admission: Admission;
            flights: Flights;
            metrics: GatewayMetrics;
            log: Logger;
            ready: () => { ok: true } | { ok: false; reason: string };
            ttlSeconds: number;
            /** Which door the client came through (doors.ts): an allowed source, a sticky port. */
            door?: (socket: Socket) => Door;
        },
    ) {}

    /**
     * Admits one request or tunnel (readiness, credentials, a lease: admission.ts) and hands its Flight
     * to `go`, or answers the refusal. The lease is released when `closes` (the answer, or the tunnel's
     * socket) closes, however that comes about. `body`: what a retry would send again (undefined: the
     * request streams its body and is never replayed).
     */
    enter(
        clientSocket: Socket,
        credentials: ProxyCredentials,
        kind: Flight["kind"],
        hostname: string,
        closes: EventEmitter,
        body: Buffer | undefined,
        to: EntryAnswers,
    ): void {
        const ready = this.o.ready();
        if (!ready.ok) return to.refuse(refusal("not_ready", ready.reason, { "Retry-After": "5" }));
        const socket = clientSocket as TaggedSocket;
        if (socket.destroyed) return to.refuse(refusal("bad_request", "the client went away"));
        if (!credentials.ok) {
            this.o.metrics.refused("bad_request");
            return to.refuse(refusal("bad_request", credentials.message));
        }
        const { username, password } = credentials;
        const door = this.o.door?.(socket);
        const onGone = (leave: () => void) => {
            // Gone already (during a first attempt on the store): its close event came and went.
            if (socket.destroyed) {
                queueMicrotask(leave);
                return () => undefined;
            }
            socket.once("close", leave);
            return () => void socket.off("close", leave);
        };
        const admitted = settle(
            this.o.admission.admit({ username, password, hostname, onGone, door, key: credentials }),
            (got) => {
                if (!got.ok) {
                    if (got.refusal.code === "none_available" || got.refusal.code === "store_unavailable")
                        this.o.metrics.request(doorPoolLabel(username, !password, door), kind, "unavailable");
                    else
                        this.o.metrics.refused(
                            got.refusal.code as Exclude<
                                Refusal["code"],
                                "none_available" | "not_ready" | "store_unavailable"
                            >,
                        );
                    return to.refuse(got.refusal);
                }
                const replayable = body !== undefined;
                const f = this.o.flights.launch(got.admitted, {
                    kind,
                    socket,
                    closes,
                    ttlSeconds: this.o.ttlSeconds,
                    replayable,
                    body: kind === "http" ? body : undefined,
                });
                // The client left while the request waited for a member (or for the store): no close
                // event is coming, so the lease goes back now.
                if (socket.destroyed) {
                    this.o.flights.end(f);
                    return to.refuse(refusal("bad_request", "the client went away"));
                }
                to.go(f);
            },
        );
        if (admitted instanceof Promise) admitted.catch((e: Error) => this.failed(socket, e, to));
    }

    /** A bug on the way to a member: the client gets a 500 (or its front door's own answer), the log the stack. */
    private failed(socket: Socket, error: Error, to: EntryAnswers): void {
        this.o.log.warn({ err: error }, "gateway request failed");
        if (!socket.writable) return void socket.destroy();
        if (to.internal) return to.internal();
        rawAnswer(socket, "internal", "the gateway failed on this request; its log has the details");
    }
}

/**
 * The pool a refused request asked for, for metrics, as admission.ts resolves it: the username's, else
 * its sticky port's, else (sending no token) its allow rule's, else any.
 */
function doorPoolLabel(username: string, asAllowed: boolean, door: Door | undefined): string {
    const named = poolLabel(username);
    if (named !== "*") return named;
    return door?.sticky?.pool ?? (asAllowed ? door?.allow?.pool : undefined) ?? named;
}
