import { EventEmitter } from "node:events";
import type { Socket } from "node:net";
import type { ErrorCode } from "../http/catalogue";
import { memberFailureAnswer, rawAnswer, rawHead, type MemberFailure } from "./answers";
import type { RequestHead, ResponseHead } from "./framing";
import { hopByHop } from "./framing";

/** The most of a streamed request body held while its request waits for a member: then the client is paused. */
const QUEUE_BYTES = 64 * 1024;

/**
 * One plain HTTP request on a client connection of the byte-level door (http-door.ts) and its answer:
 * the request's head, its body as it arrives (held for a replay, queued until a member is connected,
 * then streamed with backpressure), and the answer written back on the client's socket. It emits
 * `close` once, when the exchange is over however it ended (answered, refused, cut, the client gone):
 * the flight's lease is released then (flights.ts).
 */
export class Exchange extends EventEmitter {
    /** The request's lines a relay drops (hop-by-hop, what Connection names, an Expect the gateway answered). */
    readonly drop: ReadonlySet<string>;
    /** The request's body has been read to its end. */
    requestDone = false;
    /** The whole request (head and body) went to the member now relaying it. */
    requestSent = false;
    /** The client went away before the exchange was over. */
    gone = false;
    private ended = false;
    private readonly queued: Buffer[] = [];
    private queuedBytes = 0;
    private target?: Socket;
    private readonly goneHooks: (() => void)[] = [];
    private whenRead?: (body: Buffer) => void;
    private keepOpen = false;

    constructor(
        readonly head: RequestHead,
        readonly socket: Socket,
        private readonly conn: {
            /** The exchange is over: the next request may be read, or the connection ends (`close`). */
            done(close: boolean): void;
            /** The connection may stay open after this answer (gateway not closing, client still there). */
            mayKeepOpen(): boolean;
        },
        /** The gateway answered `Expect: 100-continue` itself: the member does not see the Expect. */
        continued: boolean,
    ) {
        super();
        const drop = hopByHop(head);
        this.drop = continued ? new Set(drop).add("expect") : drop;
    }

    /** The first value of the request's header `name` (lower case), as it arrived. */
    header(name: string): string | undefined {
        return this.head.fields.find((f) => f.name.length === name.length && f.name.toLowerCase() === name)?.value;
    }

    /** Body bytes of the request as they came (framing included). */
    body(raw: Buffer): void {
        if (this.target) {
            if (!this.target.write(raw)) this.pauseUntilDrained(this.target);
            return;
        }
        this.queued.push(raw);
        this.queuedBytes += raw.length;
        // A request waiting for a member (or read whole for a replay: at most MAX_REPLAY_BODY) stops its client past the bound.
        if (!this.whenRead && this.queuedBytes > QUEUE_BYTES) this.socket.pause();
    }

    /** The request's body ended. */
    requestEnded(): void {
        this.requestDone = true;
        if (this.target) this.requestSent = true;
        const read = this.whenRead;
        this.whenRead = undefined;
        read?.(Buffer.concat(this.queued.splice(0)));
    }

    /** Calls `then` with the whole body once it is read (a replayable request's, at most MAX_REPLAY_BODY). */
    readWhole(then: (body: Buffer) => void): void {
        if (this.requestDone) return then(Buffer.concat(this.queued.splice(0)));
        this.whenRead = then;
    }

    /**
     * Sends the request to member connection `m`: `head` and the replayable `body` in one write, or the
     * head, the queued body bytes and then the rest as it comes (a streamed body: one member only).
     */
    sendRequest(m: Socket, head: Buffer, body: Buffer | undefined): void {
        if (body !== undefined) {
            m.write(body.length ? Buffer.concat([head, body]) : head);
            this.requestSent = true;
            return;
        }
        const parts = [head, ...this.queued.splice(0)];
        this.queuedBytes = 0;
        m.write(parts.length === 1 ? head : Buffer.concat(parts));
        this.target = m;
        this.requestSent = this.requestDone;
        this.socket.resume();
    }

    /** The member connection `m` no longer takes the request's body. */
    stopStreaming(m: Socket): void {
        if (this.target === m) this.target = undefined;
    }

    private pauseUntilDrained(m: Socket): void {
        this.socket.pause();
        m.once("drain", () => this.socket.resume());
    }

    /** Calls `hook` if the client goes away before the exchange is over. */
    onGone(hook: () => void): void {
        this.goneHooks.push(hook);
    }

    /** The client's connection closed. */
    clientGone(): void {
        if (this.ended) return;
        this.gone = true;
        for (const h of this.goneHooks.splice(0)) h();
        this.end(true);
    }

    /** Writes the answer's head; `emit` makes it, told whether the connection stays open after the answer. */
    answerHead(h: ResponseHead, emit: (keepOpen: boolean) => Buffer): void {
        this.keepOpen =
            this.head.keepAlive && this.head.version === "1.1" && h.framing.kind !== "close" && this.conn.mayKeepOpen();
        this.socket.write(emit(this.keepOpen));
    }

    /** Answer body bytes; false: the client's buffer is full (wait for `onDrain`). */
    answerBody(raw: Buffer): boolean {
        return this.socket.write(raw);
    }

    onDrain(then: () => void): void {
        this.socket.once("drain", then);
    }

    /** The whole answer was written. */
    answered(closeAfter: boolean): void {
        this.end(closeAfter || !this.keepOpen || !this.requestDone);
    }

    /**
     * The exchange cannot be completed honestly (the answer broke off after its head, or the client's
     * body broke its framing): the client's connection is cut, and the attempt in flight is told first,
     * so its member connection is closed and not left waiting.
     */
    cut(): void {
        if (!this.ended) for (const h of this.goneHooks.splice(0)) h();
        this.socket.destroy();
        this.end(true);
    }

    /** A refusal before any member answered: JSON, `X-Egress-Error`, `Proxy-Status`; the connection closes. */
    refuse(code: ErrorCode, message: string, extra?: Record<string, string>): void {
        if (this.ended) return;
        if (this.socket.writable) rawAnswer(this.socket, code, message, extra);
        else this.socket.destroy();
        this.end(true);
    }

    /** The member failed before its answer and no other member took over: 502/504 with `Proxy-Status`. */
    failAnswer(failure: MemberFailure, memberId: string, attempt: number): void {
        if (this.ended) return;
        if (!this.socket.writable) return this.clientGone();
        const a = memberFailureAnswer(failure, memberId, attempt);
        rawHead(this.socket, a.status, a.headers);
        this.socket.end(a.text);
        this.end(true);
    }

    private end(close: boolean): void {
        if (this.ended) return;
        this.ended = true;
        this.target = undefined;
        this.emit("close");
        this.conn.done(close);
    }
}
