import * as http from "node:http";
import type { Socket } from "node:net";
import { answer, ATTEMPTS, memberFailure, memberFailureAnswer, type MemberFailure } from "./answers";
import { isMemberError } from "./outcome";
import { BLOCKED, type Flight } from "./flight";
import type { MemberHop } from "./member-hop";

/**
 * A plain HTTP request (absolute-form) relayed through its leased member: the member is itself a
 * forward proxy, so it gets the absolute URI and the member's credentials, over the member's keep-alive
 * agent. Bodies stream both ways with backpressure (pipe); nothing is buffered whole.
 */

/** How long a new connection to a member may take before the request fails 504 `member_timeout`. */
export const MEMBER_CONNECT_TIMEOUT_MS = 10_000;

/** Headers that describe one connection (RFC 9110 §7.6.1), never relayed, besides those `Connection` names. */
const HOP_BY_HOP = new Set([
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
]);

/**
 * The end-to-end part of raw headers (name, value, …): hop-by-hop ones and those listed in
 * `Connection` dropped, and only the first `Host` (a second one would make the member pick either).
 * Node frames the body again on each side, so `Transfer-Encoding` goes too.
 */
export function endToEnd(raw: readonly string[]): string[] {
    let named: Set<string> | undefined;
    for (let i = 0; i < raw.length; i += 2)
        if (raw[i].length === 10 && raw[i].toLowerCase() === "connection") {
            named ??= new Set();
            for (const token of raw[i + 1].split(",")) named.add(token.trim().toLowerCase());
        }
    const out: string[] = [];
    let host = false;
    for (let i = 0; i < raw.length; i += 2) {
        const name = raw[i].toLowerCase();
        if (HOP_BY_HOP.has(name) || named?.has(name)) continue;
        if (name === "host") {
            if (host) continue;
            host = true;
        }
        out.push(raw[i], raw[i + 1]);
    }
    return out;
}

/** A `member_timeout` when a new connection to the member does not open in time; kept-alive ones are open already. */
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

/** How long a member may take by default to send its answer's head or answer a CONNECT (it connects to the origin first). */
export const MEMBER_ANSWER_MS = 30_000;

/**
 * Relays `req` through `hop` into `res`. `f` gets the relayed status and headers (the outcome reads
 * them) and `complete` once the whole answer reached the client. A member failing before its head (or
 * answering with its own proxy error, outcome.ts) is reported to `on.failed`; unless another member
 * takes over, the client gets 502/504 with `Proxy-Status` (or the member's own error answer). After the
 * head, the client's connection is cut (the answer cannot be completed honestly).
 */
export function forwardHttp(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    f: Flight,
    hop: MemberHop,
    on: AttemptEvents,
): void {
    const memberId = f.lease.proxy.id;
    const headers = endToEnd(req.rawHeaders);
    if (hop.authorization) headers.push("Proxy-Authorization", hop.authorization);
    let up: http.ClientRequest;
    try {
        up = http.request({
            host: hop.host,
            port: hop.port,
            method: req.method,
            path: req.url,
            headers,
            setHost: false,
            agent: hop.agent,
            // Origins send sloppy heads a browser reads; the member relays them, and so does the gateway.
            insecureHTTPParser: true,
        });
    } catch (e) {
        // Node refuses a header value the lenient parser let in: the client's mistake, no member tried.
        return answer(res, "bad_request", `a request header cannot be relayed: ${(e as Error).message}`);
    }
    const headTimer = setTimeout(() => {
        const err: NodeJS.ErrnoException = new Error(`no answer in ${on.answerMs} ms`);
        err.code = "ETIMEDOUT";
        up.destroy(err);
    }, on.answerMs).unref();
    let failed = false;
    const fail = (failure: MemberFailure) => {
        clearTimeout(headTimer);
        // Once per attempt: a late error of an attempt another member took over must not touch its answer.
        if (failed) return;
        if (res.headersSent || res.destroyed) return void res.destroy();
        failed = true;
        f.memberFailed = true;
        on.failed(failure.type, (retrying) => {
            if (retrying || res.headersSent) return;
            if (res.destroyed) return;
            const a = memberFailureAnswer(failure, memberId, f.attempt);
            res.writeHead(a.status, a.headers).end(a.text);
        });
    };
    up.once("socket", (s: Socket) => timeConnect(s, (err) => up.destroy(err)));
    up.on("error", (err: NodeJS.ErrnoException) => fail(memberFailure(err, "relaying the request")));
    up.once("response", (answer: http.IncomingMessage) => {
        clearTimeout(headTimer);
        if (answer.statusCode === 407) {
            // The member refused the gateway's own credentials: a configuration error, not the client's to fix.
            answer.resume();
            return fail({
                code: "member_unreachable",
                type: "proxy_configuration_error",
                details: "the member refused the gateway's credentials (407)",
            });
        }
        const relayed = endToEnd(answer.rawHeaders);
        f.status = answer.statusCode;
        f.rawHeaders = relayed;
        const memberError = isMemberError(answer.statusCode!, relayed);
        if (!memberError && !on.retryBlock(answer.statusCode!, relayed)) return relay(answer, relayed);
        // The member's own error (it could not reach the origin, …), or the origin blocked this member's
        // address: another member may do better; the answer waits, unread, for that decision.
        failed = true;
        on.failed(memberError ? "member_error" : BLOCKED, (retrying) => {
            if (retrying) return void up.destroy();
            if (res.destroyed) return void up.destroy();
            relay(answer, relayed);
        });
    });
    const relay = (answer: http.IncomingMessage, relayed: string[]) => {
        on.head();
        // Which member served it: for logs and for a client that reports blocks by member.
        res.writeHead(answer.statusCode!, answer.statusMessage, [
            ...relayed,
            "X-Egress-Proxy",
            memberId,
            ATTEMPTS,
            String(f.attempt),
        ]);
        answer.on("error", () => res.destroy());
        answer.pipe(res);
        // A member that breaks off mid-answer: the client must see the answer end early, not wait.
        answer.once("close", () => {
            if (!answer.complete) res.destroy();
        });
    };
    res.once("finish", () => {
        f.complete = true;
    });
    // The client left (or the gateway cut it) before the whole answer: stop the member's side too. A
    // finished answer leaves the member's connection to its agent, for the next request.
    res.once("close", () => {
        clearTimeout(headTimer);
        if (!res.writableFinished) up.destroy();
    });
    // A replayable request's body is the gateway's (read whole, or none): each attempt sends all of it.
    if (f.body !== undefined) return void up.end(f.body);
    req.on("error", () => up.destroy());
    req.pipe(up);
}
