import type { Socket } from "node:net";
import { ATTEMPTS, memberFailure, type MemberFailure } from "./answers";
import { BLOCKED, type Flight } from "./flight";
import { emitHead, FramingError, hopByHop, ResponseStream, type ResponseHead } from "./framing";
import type { MemberHop, MemberUse } from "./member-hop";
import { memberIdleMs } from "./member-hop";
import { isMemberError } from "./outcome";
import type { Exchange } from "./exchange";

/**
 * A plain HTTP request (absolute-form) relayed through its leased member at the byte level (issue 34):
 * the member is itself a forward proxy, so it gets the client's head as it came (the same absolute URI
 * and version), hop-by-hop lines dropped and the member's credentials added, in one write over one of
 * the member's idle connections; the answer is read by the framing layer (framing/), which says where
 * it ends, and passed on as it came (a chunked body stays chunked), with `X-Egress-Proxy` and
 * `X-Egress-Attempts` added to its head. Bodies stream both ways with backpressure; nothing is buffered
 * whole, but a replayable request's body, which the gateway holds (replay.ts).
 */

/** How long a new connection to a member may take before the request fails 504 `member_timeout`. */
export const MEMBER_CONNECT_TIMEOUT_MS = 10_000;

/** How long a member may take by default to send its answer's head or answer a CONNECT (it connects to the origin first). */
export const MEMBER_ANSWER_MS = 30_000;

/**
 * What an attempt tells its request (server.ts, retries.ts): the member's head arrived, or the member
 * failed before it. `failed` decides whether another member takes the request over and calls `then`
 * with that decision (maybe later: the next lease may come from a store across the network).
 */
export interface AttemptEvents {
    head(): void;
    failed(reason: string, then: (retrying: boolean) => void): void;
    /** Whether the relayed answer is an origin's block that another member should be asked instead (`gateway.retryOnBlock`). */
    retryBlock(status: number, rawHeaders: readonly string[]): boolean;
    /** How long the member may take to send its answer's head. */
    answerMs: number;
}

/** A `member_timeout` when a new connection to the member does not open in time; idle ones are open already. */
export function timeConnect(socket: Socket, fail: (err: NodeJS.ErrnoException) => void): void {
    if (!socket.connecting) return;
    const timer = setTimeout(() => {
        const err: NodeJS.ErrnoException = new Error(`no connection in ${MEMBER_CONNECT_TIMEOUT_MS} ms`);
        err.code = "ETIMEDOUT";
        fail(err);
    }, MEMBER_CONNECT_TIMEOUT_MS).unref();
    socket.once("connect", () => clearTimeout(timer));
    socket.once("close", () => clearTimeout(timer));
}

/** The answer's lines as node's rawHeaders (name, value, …), hop-by-hop ones dropped: what outcome.ts reads. */
function relayedFields(h: ResponseHead, drop: ReadonlySet<string>): string[] {
    const out: string[] = [];
    for (const f of h.fields) if (!drop.has(f.name.toLowerCase())) out.push(f.name, f.value);
    return out;
}

/**
 * One attempt of `x` through `hop`. `f` gets the relayed status and headers (the outcome reads them)
 * and `complete` once the whole answer reached the client. A member failing before its head (or
 * answering with its own proxy error, outcome.ts) is reported to `on.failed`; unless another member
 * takes over, the client gets 502/504 with `Proxy-Status` (or the member's own error answer). After the
 * head, the client's connection is cut (the answer cannot be completed honestly).
 */
export function relayHttp(x: Exchange, f: Flight, hop: MemberHop, on: AttemptEvents): void {
    new HttpAttempt(x, f, hop, on).start();
}

/**
 * The state of one attempt. It is the member connection's user (MemberUse) while it holds it, so the
 * connection's events come here without listeners added per request.
 * - `waiting`: for the answer's head; a failure now may be retried on another member.
 * - `deciding`: the head is the member's own error or an origin's block; retry or relay it.
 * - `relaying`: the answer goes to the client; a failure now cuts the client's connection.
 * - `done`: the answer ended, the attempt failed, or the client went away.
 */
class HttpAttempt implements MemberUse {
    private readonly memberId: string;
    private readonly m: Socket;
    private readonly rs: ResponseStream;
    private readonly headTimer: NodeJS.Timeout;
    private state: "waiting" | "deciding" | "relaying" | "done" = "waiting";
    /** Body bytes read while an error answer waits for the retry decision. */
    private readonly held: Buffer[] = [];
    private head: ResponseHead | undefined;
    /** The member connection went back (idle or closed): it may be another attempt's now. */
    private given = false;

    constructor(
        private readonly x: Exchange,
        private readonly f: Flight,
        private readonly hop: MemberHop,
        private readonly on: AttemptEvents,
    ) {
        this.memberId = f.lease.proxy.id;
        this.m = hop.conns.take(this);
        this.headTimer = setTimeout(() => {
            const err: NodeJS.ErrnoException = new Error(`no answer in ${on.answerMs} ms`);
            err.code = "ETIMEDOUT";
            this.fail(memberFailure(err, "relaying the request"));
        }, on.answerMs).unref();
        this.rs = new ResponseStream(x.head.method, {
            head: (h) => this.onHead(h),
            body: (b) => (this.state === "relaying" ? this.relayBody(b) : this.held.push(b)),
            end: () => this.state === "relaying" && this.answered(),
        });
    }

    /** Sends the request: one write for the head (and a replayable body); a streamed body follows with backpressure. */
    start(): void {
        timeConnect(this.m, (err) => this.m.destroy(err));
        this.x.onGone(() => {
            if (this.state === "done") return;
            this.state = "done";
            this.finish(false);
        });
        const auth: [string, string][] = this.hop.authorization
            ? [["Proxy-Authorization", this.hop.authorization]]
            : [];
        this.x.sendRequest(this.m, emitHead(this.x.head, this.x.drop, auth), this.f.body);
    }

    // The member connection's events (MemberUse).

    data(chunk: Buffer): void {
        // What one chunk of the answer makes (its head and the body bytes with it, often all of a small
        // answer) goes to the client in one write: a write to a loopback socket is most of a relay's CPU.
        const client = this.x.socket;
        client.cork();
        try {
            this.rs.push(chunk);
        } catch (e) {
            if (e instanceof FramingError) {
                const err: NodeJS.ErrnoException = new Error(`${e.reason}: ${e.message}`);
                err.code = "HPE_INVALID_ANSWER";
                return this.fail(memberFailure(err, "relaying the request"));
            }
            // The gateway's own fault on this answer (a member id no header may carry): cut, never thrown
            // out of a socket's event, where it would end the process.
            this.state = "done";
            this.finish(false);
            this.x.cut();
        } finally {
            client.uncork();
        }
    }

    end(): void {
        try {
            this.rs.finish(); // ends an answer that runs to the close; refuses a cut one
        } catch {
            this.fail(memberFailure(closedErr(), "relaying the request"));
        }
    }

    error(err: NodeJS.ErrnoException): void {
        this.fail(memberFailure(err, "relaying the request"));
    }

    close(): void {
        if (this.state !== "done") this.fail(memberFailure(closedErr(), "relaying the request"));
    }

    // The answer.

    private onHead(h: ResponseHead): void {
        if (h.interim) return; // 1xx: node's client swallowed them too; a 100 Continue was the gateway's own
        clearTimeout(this.headTimer);
        this.head = h;
        if (h.status === 407)
            return this.fail({
                code: "member_unreachable",
                type: "proxy_configuration_error",
                details: "the member refused the gateway's credentials (407)",
            });
        const drop = hopByHop(h);
        const relayed = relayedFields(h, drop);
        this.f.status = h.status;
        this.f.rawHeaders = relayed;
        const memberError = isMemberError(h.status, relayed);
        if (!memberError && !this.on.retryBlock(h.status, relayed)) return this.relayHead(h, drop);
        // The member's own error (it could not reach the origin, …), or the origin blocked this member's
        // address: another member may do better; the answer waits, unread, for that decision.
        this.state = "deciding";
        this.m.pause();
        this.on.failed(memberError ? "member_error" : BLOCKED, (retrying) => {
            if (this.state !== "deciding") return;
            if (!retrying && !this.x.gone) return this.relayHead(h, drop);
            this.state = "done";
            this.finish(false);
        });
    }

    private relayHead(h: ResponseHead, drop: ReadonlySet<string>): void {
        this.state = "relaying";
        this.on.head();
        const add: [string, string][] = [
            ["X-Egress-Proxy", this.memberId],
            [ATTEMPTS, String(this.f.attempt)],
        ];
        this.x.answerHead(h, (keepOpen) => emitHead(h, drop, keepOpen ? add : [...add, ["Connection", "close"]]));
        for (const b of this.held.splice(0)) this.relayBody(b);
        if (this.rs.done) this.answered();
        else this.m.resume();
    }

    private relayBody(b: Buffer): void {
        if (this.x.answerBody(b)) return;
        this.m.pause();
        // Only while this attempt still holds the connection: given back, it may be another's, paused for its own client.
        this.x.onDrain(() => this.given || this.m.resume());
    }

    private answered(): void {
        const head = this.head!;
        this.f.complete = true;
        this.state = "done";
        // Reused only in step: the whole request went out, nothing came after the answer, and both sides
        // meant to keep it (an HTTP/1.0 request was sent without keep-alive: its Connection line is dropped).
        this.finish(head.keepAlive && this.rs.extra === 0 && this.x.requestSent && this.x.head.version === "1.1");
        this.x.answered(head.framing.kind === "close");
    }

    // The end of the attempt.

    /** The member connection goes back idle (a clean end) or is closed; once. */
    private finish(reusable: boolean): void {
        if (this.given) return;
        this.given = true;
        clearTimeout(this.headTimer);
        this.x.stopStreaming(this.m);
        this.hop.conns.give(this.m, reusable, memberIdleMs(keepAliveHint(this.head)));
    }

    private fail(failure: MemberFailure): void {
        if (this.state === "done") return;
        const before = this.state === "waiting";
        this.state = "done";
        this.finish(false);
        if (!before) return this.x.cut();
        this.f.memberFailed = true;
        this.on.failed(
            failure.type,
            (retrying) => retrying || this.x.failAnswer(failure, this.memberId, this.f.attempt),
        );
    }
}

function closedErr(): NodeJS.ErrnoException {
    const err: NodeJS.ErrnoException = new Error("the member closed the connection");
    err.code = "ECONNRESET";
    return err;
}

/** The answer's `Keep-Alive` value, whose `timeout=N` says how long the member keeps the connection idle. */
function keepAliveHint(h: ResponseHead | undefined): string | undefined {
    return h?.fields.find((f) => f.name.length === 10 && f.name.toLowerCase() === "keep-alive")?.value;
}
