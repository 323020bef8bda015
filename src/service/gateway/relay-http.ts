import type { Socket } from "node:net";
import { ATTEMPTS, memberFailure, type MemberFailure } from "./answers";
import { BLOCKED, type Flight } from "./flight";
import { emitHead, FramingError, hopByHop, ResponseStream, type ResponseHead } from "./framing";
import type { MemberHop } from "./member-hop";
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
    const memberId = f.lease.proxy.id;
    // Its events come to this attempt (MemberUse) until it is given back.
    const m = hop.conns.take({
        data: (chunk) => read(chunk),
        end: () => ended(),
        error: (err) => fail(memberFailure(err, "relaying the request")),
        close: () => state !== "done" && fail(memberFailure(closedErr(), "relaying the request")),
    });
    let state: "waiting" | "deciding" | "relaying" | "done" = "waiting";
    /** Body bytes read while an error answer waits for the retry decision. */
    const held: Buffer[] = [];
    let head: ResponseHead | undefined;
    let given = false;
    const headTimer = setTimeout(() => {
        const err: NodeJS.ErrnoException = new Error(`no answer in ${on.answerMs} ms`);
        err.code = "ETIMEDOUT";
        fail(memberFailure(err, "relaying the request"));
    }, on.answerMs).unref();
    /** The member connection goes back idle (a clean end) or is closed; once. */
    const finish = (reusable: boolean) => {
        if (given) return;
        given = true;
        clearTimeout(headTimer);
        x.stopStreaming(m);
        hop.conns.give(m, reusable, memberIdleMs(keepAliveHint(head)));
    };
    const fail = (failure: MemberFailure) => {
        if (state === "done") return;
        const before = state === "waiting";
        state = "done";
        finish(false);
        if (!before) return x.cut();
        f.memberFailed = true;
        on.failed(failure.type, (retrying) => retrying || x.failAnswer(failure, memberId, f.attempt));
    };
    const relayHead = (h: ResponseHead, drop: ReadonlySet<string>) => {
        state = "relaying";
        on.head();
        const add: [string, string][] = [
            ["X-Egress-Proxy", memberId],
            [ATTEMPTS, String(f.attempt)],
        ];
        x.answerHead(h, (keepOpen) => emitHead(h, drop, keepOpen ? add : [...add, ["Connection", "close"]]));
        for (const b of held.splice(0)) relayBody(b);
        if (rs.done) answered();
        else m.resume();
    };
    const relayBody = (b: Buffer) => {
        if (!x.answerBody(b)) {
            m.pause();
            // Only while this attempt still holds the connection: given back, it may be another's, paused for its own client.
            x.onDrain(() => given || m.resume());
        }
    };
    const answered = () => {
        f.complete = true;
        state = "done";
        // Reused only in step: the whole request went out, nothing came after the answer, and both sides
        // meant to keep it (an HTTP/1.0 request was sent without keep-alive: its Connection line is dropped).
        finish(head!.keepAlive && rs.extra === 0 && x.requestSent && x.head.version === "1.1");
        x.answered(head!.framing.kind === "close");
    };
    const onHead = (h: ResponseHead) => {
        if (h.interim) return; // 1xx: node's client swallowed them too; a 100 Continue was the gateway's own
        clearTimeout(headTimer);
        head = h;
        if (h.status === 407)
            return fail({
                code: "member_unreachable",
                type: "proxy_configuration_error",
                details: "the member refused the gateway's credentials (407)",
            });
        const drop = hopByHop(h);
        const relayed = relayedFields(h, drop);
        f.status = h.status;
        f.rawHeaders = relayed;
        const memberError = isMemberError(h.status, relayed);
        if (!memberError && !on.retryBlock(h.status, relayed)) return relayHead(h, drop);
        // The member's own error (it could not reach the origin, …), or the origin blocked this member's
        // address: another member may do better; the answer waits, unread, for that decision.
        state = "deciding";
        m.pause();
        on.failed(memberError ? "member_error" : BLOCKED, (retrying) => {
            if (state !== "deciding") return;
            if (retrying || x.gone) {
                state = "done";
                return finish(false);
            }
            relayHead(h, drop);
        });
    };
    const rs = new ResponseStream(x.head.method, {
        head: onHead,
        body: (b) => (state === "relaying" ? relayBody(b) : held.push(b)),
        end: () => state === "relaying" && answered(),
    });
    const read = (chunk: Buffer) => {
        // What one chunk of the answer makes (its head and the body bytes with it, often all of a small
        // answer) goes to the client in one write: a write to a loopback socket is most of a relay's CPU.
        const client = x.socket;
        client.cork();
        try {
            rs.push(chunk);
        } catch (e) {
            if (e instanceof FramingError) {
                const err: NodeJS.ErrnoException = new Error(`${e.reason}: ${e.message}`);
                err.code = "HPE_INVALID_ANSWER";
                return fail(memberFailure(err, "relaying the request"));
            }
            // The gateway's own fault on this answer (a member id no header may carry): cut, never thrown
            // out of a socket's event, where it would end the process.
            state = "done";
            finish(false);
            x.cut();
        } finally {
            client.uncork();
        }
    };
    const ended = () => {
        try {
            rs.finish(); // ends an answer that runs to the close; refuses a cut one
        } catch {
            return fail(memberFailure(closedErr(), "relaying the request"));
        }
    };
    timeConnect(m, (err) => m.destroy(err));
    x.onGone(() => {
        if (state !== "done") {
            state = "done";
            finish(false);
        }
    });
    // One write for the head (and a replayable body); a streamed body follows with backpressure.
    const auth: [string, string][] = hop.authorization ? [["Proxy-Authorization", hop.authorization]] : [];
    x.sendRequest(m, emitHead(x.head, x.drop, auth), f.body);
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
