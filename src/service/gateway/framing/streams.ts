import type { BodyCounter } from "./body";
import { CR, LF } from "./chars";
import { bodyCounter } from "./counter";
import { FramingError, refuse } from "./errors";
import { framingLimits, type FramingLimits } from "./limits";
import { RequestHeadParser, type RequestHead } from "./request-head";
import { ResponseHeadParser, type ResponseHead } from "./response-head";

/** What a stream reports of each message, in order: its head, its body's bytes, its end. */
export interface MessageEvents<H> {
    head(head: H): void;
    /** Body bytes as they arrived, framing included: what a relay passes on. */
    body?(raw: Buffer): void;
    /** The body's content: a chunked body's chunk data, else the same bytes as `body`. */
    content?(data: Buffer): void;
    end(): void;
}

export interface RequestEvents extends MessageEvents<RequestHead> {
    /** A CONNECT head was read: what follows it (here `rest`, then every later byte) is the tunnel's. */
    tunnel?(rest: Buffer): void;
}

/**
 * What a client sends on one connection, read as a sequence of requests: heads, bodies counted to their
 * end, pipelined requests one after the other. After a request that ends the connection (`Connection:
 * close`, HTTP/1.0 without keep-alive) only blank lines may follow (llhttp refuses anything else too);
 * after CONNECT the rest is the tunnel's. The first FramingError ends the stream: every later call
 * throws it again.
 */
export class RequestStream {
    private readonly heads: RequestHeadParser;
    private readonly limits: FramingLimits;
    private counter: BodyCounter | undefined;
    /** The last request read closes the connection; `cr`: a blank line after it is half read. */
    private last = false;
    private cr = false;
    private tunnel = false;
    private failed: FramingError | undefined;

    constructor(
        private readonly events: RequestEvents,
        limits: Partial<FramingLimits> = {},
        /** Stop after each request's end (push returns where): a relay answers one request at a time. */
        private readonly oneAtATime = false,
    ) {
        this.limits = framingLimits(limits);
        this.heads = new RequestHeadParser(this.limits);
    }

    /**
     * Reads `chunk`; returns how much of it was read: all of it, unless `oneAtATime` stopped after a
     * request's end (the caller pushes the rest once that request is answered).
     */
    push(chunk: Buffer): number {
        let at = 0;
        this.guard(() => {
            if (this.tunnel) return void (at = chunk.length);
            while (at < chunk.length) {
                if (this.counter) {
                    at = this.body(chunk, at);
                    if (!this.counter && this.oneAtATime) return;
                } else if (this.last) {
                    this.afterLast(chunk, at);
                    at = chunk.length;
                } else {
                    const read = this.heads.push(chunk, at);
                    if (!read) return void (at = chunk.length);
                    at = read.next;
                    this.events.head(read.head);
                    if (read.head.method === "CONNECT") {
                        this.tunnel = true;
                        const rest = chunk.subarray(at);
                        at = chunk.length;
                        return this.events.tunnel?.(rest);
                    }
                    this.last = !read.head.keepAlive;
                    this.counter = bodyCounter(read.head.framing, this.limits);
                    if (this.counter.done) {
                        this.ended();
                        if (this.oneAtATime) return;
                    }
                }
            }
        });
        return at;
    }

    /** Part of a request read: a head begun, or a body not at its end. */
    get pending(): boolean {
        return this.counter !== undefined || this.heads.pending;
    }

    /** The client's end of the connection: refused if it came inside a message. */
    finish(): void {
        this.guard(() => {
            if (this.tunnel) return;
            if (this.counter) this.counter.finish();
            else if (this.heads.pending) refuse("truncated", "the connection ended inside a request head");
        });
    }

    /** Retained between calls: the head parser's buffer (at most the head limit); counters hold numbers. */
    get retainedBytes(): number {
        return this.heads.retainedBytes;
    }

    private body(chunk: Buffer, at: number): number {
        const next = this.counter!.consume(chunk, at, this.events.content);
        if (next > at) this.events.body?.(chunk.subarray(at, next));
        if (this.counter!.done) this.ended();
        return next;
    }

    private ended(): void {
        this.counter = undefined;
        this.events.end();
    }

    /** After the request that closes the connection: blank lines (CRLF), as llhttp allows, and nothing else. */
    private afterLast(chunk: Buffer, at: number): void {
        for (let i = at; i < chunk.length; i++)
            if (chunk[i] === (this.cr ? LF : CR)) this.cr = !this.cr;
            else refuse("data_after_close", "bytes after the request that closes the connection");
    }

    private guard(run: () => void): void {
        if (this.failed) throw this.failed;
        try {
            run();
        } catch (e) {
            if (e instanceof FramingError) this.failed = e;
            throw e;
        }
    }
}

/**
 * A member's answer to one request (`method`): 1xx heads, each reported and followed by the next
 * head, then the final head and its body. Bytes after the answer's end are counted in `extra`, not
 * read: a connection that carried them is out of step with its requests and must not be reused.
 */
export class ResponseStream {
    private readonly heads: ResponseHeadParser;
    private readonly limits: FramingLimits;
    private counter: BodyCounter | undefined;
    private complete = false;
    private failed: FramingError | undefined;
    /** Bytes received after the answer's end. */
    extra = 0;

    constructor(
        private readonly method: string,
        private readonly events: MessageEvents<ResponseHead>,
        limits: Partial<FramingLimits> = {},
    ) {
        this.limits = framingLimits(limits);
        this.heads = new ResponseHeadParser(this.limits);
    }

    get done(): boolean {
        return this.complete;
    }

    push(chunk: Buffer): void {
        this.guard(() => {
            if (this.complete) return void (this.extra += chunk.length);
            let at = 0;
            while (at < chunk.length) {
                if (this.counter) {
                    const next = this.counter.consume(chunk, at, this.events.content);
                    if (next > at) this.events.body?.(chunk.subarray(at, next));
                    at = next;
                    if (this.counter.done) return this.endAt(chunk, at);
                    continue;
                }
                const read = this.heads.push(chunk, at, this.method);
                if (!read) return;
                at = read.next;
                this.events.head(read.head);
                if (read.head.interim) continue;
                this.counter = bodyCounter(read.head.framing, this.limits);
                if (this.counter.done) return this.endAt(chunk, at);
            }
        });
    }

    /**
     * The answer ended at `at` in `chunk`: what follows it is counted in `extra` before `end` is told, so
     * whoever decides there whether the connection may carry another request sees those bytes.
     */
    private endAt(chunk: Buffer, at: number): void {
        this.extra += chunk.length - at;
        this.ended();
    }

    /** The member's end of the connection: ends a body that runs to it, refuses any other unfinished answer. */
    finish(): void {
        this.guard(() => {
            if (this.complete) return;
            if (!this.counter)
                refuse(this.heads.pending ? "truncated" : "no_response", "the connection ended before a whole head");
            this.counter.finish();
            this.ended();
        });
    }

    private ended(): void {
        this.counter = undefined;
        this.complete = true;
        this.events.end();
    }

    private guard(run: () => void): void {
        if (this.failed) throw this.failed;
        try {
            run();
        } catch (e) {
            if (e instanceof FramingError) this.failed = e;
            throw e;
        }
    }
}
