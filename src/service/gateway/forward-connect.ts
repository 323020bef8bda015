import * as net from "node:net";
import type { Refusal } from "./admission";
import type { ProxyCredentials } from "./proxy-auth";
import {
    ATTEMPTS,
    memberFailure,
    memberFailureAnswer,
    type MemberFailure,
    memberProxyStatus,
    rawHead,
} from "./answers";
import type { Flight } from "./flight";
import { timeConnect } from "./relay-http";
import type { MemberHop } from "./member-hop";

/**
 * A CONNECT tunnel through its leased member: a TCP connection to the member, `CONNECT host:port` with
 * the member's credentials, the member's answer head read here; on 200 the client is told
 * `200 Connection Established` and the two sockets are piped both ways. Before the tunnel opens, a
 * member failure is answered with a standard status (502/504) and `Proxy-Status`, never a private code.
 */

/** The most a member's CONNECT answer head may hold; a bigger one is not a proxy's answer. */
const MAX_ANSWER_HEAD = 16 * 1024;
const HEAD_END = Buffer.from("\r\n\r\n");

export interface TunnelEvents {
    /** The member answered 200: the tunnel is open. */
    opened(): void;
    /** The member answered the CONNECT with another status. */
    refused(): void;
    /**
     * The member failed the CONNECT before the tunnel opened (or answered it with a 5xx of its own):
     * whether another member takes the tunnel over, given to `then` (forward-http.ts' AttemptEvents).
     */
    failed(reason: string, then: (retrying: boolean) => void): void;
    /** How long the member may take to answer the CONNECT (it connects to the target first): forward-http.ts' MEMBER_ANSWER_MS unless set. */
    answerMs: number;
}

/** Why a tunnel did not open, as its client is told (an HTTP answer here, a SOCKS5 reply in socks.ts). */
export interface TunnelFailure {
    memberId: string;
    attempt: number;
    /** What went wrong, for `Proxy-Status` with the member as next hop. */
    failure: MemberFailure;
    /** The member's own answer to the CONNECT, when it gave one (proxy-chain's 594: the target refused it). */
    memberStatus?: number;
    /** The member's answer, relayed as is (a 4xx, or a 504), with its reason; unset: the gateway's own answer. */
    relayed?: { status: number; reason?: string };
}

/**
 * The client side of a tunnel: how its client is told the tunnel opened, or why it did not (then its
 * connection ends). A front door of the gateway (the HTTP CONNECT, SOCKS5) is one of these.
 */
export interface TunnelFront {
    opened(client: net.Socket, attempt: number): void;
    failed(client: net.Socket, why: TunnelFailure): void;
}

/** The HTTP CONNECT's answers: `200 Connection Established`, or a status with `Proxy-Status`. */
export const HTTP_TUNNEL_FRONT: TunnelFront = {
    opened(client, attempt) {
        // The tunnel's head stays as it always was unless a retry happened: clients parse it minimally.
        const attempts = attempt > 1 ? `${ATTEMPTS}: ${attempt}\r\n` : "";
        client.write(`HTTP/1.1 200 Connection Established\r\n${attempts}\r\n`);
    },
    failed(client, why) {
        if (!why.relayed) {
            const a = memberFailureAnswer(why.failure, why.memberId, why.attempt);
            rawHead(client, a.status, a.headers);
            return void client.end(a.text);
        }
        rawHead(
            client,
            why.relayed.status,
            {
                "Content-Length": "0",
                "X-Egress-Proxy": why.memberId,
                "Proxy-Status": memberProxyStatus(why.failure, why.memberId),
                [ATTEMPTS]: String(why.attempt),
                Connection: "close",
            },
            why.relayed.reason,
        );
        client.end();
    },
};

/** A tunnel asked for at any front door: who asks (credentials), where to, and how its client is answered. */
export interface TunnelRequest {
    socket: net.Socket;
    credentials: ProxyCredentials;
    /** The target host as a CONNECT names it (an IPv6 address in brackets) and its port. */
    host: string;
    port: number;
    /** What the client sent past its request: the tunnel's first bytes. */
    head: Buffer;
    front: TunnelFront;
    /** Answers a refusal before any member was tried (readiness, credentials, no member free). */
    refuse(r: Refusal): void;
    /** Answers a bug on the way (default: an HTTP 500). */
    internal?(): void;
}

/** The status relayed for a member's non-200 answer: its own, unless a client could not act on it. */
export function relayedConnectStatus(status: number): number {
    // 401/407: the member refused the gateway's credentials (the client's are fine); 590–599 are
    // proxy-chain's private codes; anything outside 200–599 is no status a client understands.
    if (status === 401 || status === 407 || status < 200 || status >= 590) return 502;
    return status;
}

/**
 * `target` (`host:port`, as a CONNECT names it) through `f`'s member; `head`: what the client sent past
 * its request, for the tunnel; `front` tells the client how it went.
 */
export function forwardConnect(
    target: string,
    client: net.Socket,
    head: Buffer,
    f: Flight,
    hop: MemberHop,
    events: TunnelEvents,
    front: TunnelFront,
): void {
    const memberId = f.lease.proxy.id;
    const member = net.connect({ host: hop.host, port: hop.port });
    member.setNoDelay(true);
    let open = false;
    let settled = false;
    let answerTimer: NodeJS.Timeout | undefined;
    /** Ends the attempt before the tunnel opened: the client gets `failure`'s answer (if it is still there). */
    const fail = (failure: MemberFailure, memberStatus?: number) => {
        if (settled) return;
        settled = true;
        f.memberFailed = true;
        clearTimeout(answerTimer);
        member.destroy();
        events.failed(failure.type, (retrying) => {
            if (retrying) return;
            if (!client.writable) return void client.destroy();
            front.failed(client, { memberId, attempt: f.attempt, failure, memberStatus });
        });
    };
    timeConnect(member, (err) => fail(memberFailure(err, "connecting to the member")));
    member.once("connect", () => {
        answerTimer = setTimeout(
            () => fail({ code: "member_timeout", type: "connection_timeout", details: "no answer to the CONNECT" }),
            events.answerMs,
        ).unref();
        const auth = hop.authorization ? `Proxy-Authorization: ${hop.authorization}\r\n` : "";
        member.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${auth}\r\n`);
    });
    let got: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
        got = got.length === 0 ? chunk : Buffer.concat([got, chunk]);
        const end = got.indexOf(HEAD_END);
        if (end < 0) {
            if (got.length > MAX_ANSWER_HEAD)
                fail({
                    code: "member_unreachable",
                    type: "http_response_header_section_size",
                    details: "CONNECT answer",
                });
            return;
        }
        member.off("data", onData);
        member.pause();
        clearTimeout(answerTimer);
        const status = /^HTTP\/1\.[01] (\d{3})(?: ([^\r\n]*))?\r\n/.exec(got.subarray(0, end + 2).toString("latin1"));
        if (!status)
            return fail({
                code: "member_unreachable",
                type: "http_protocol_error",
                details: "unreadable CONNECT answer",
            });
        const code = Number(status[1]);
        if (code !== 200) return refuse(code, status[2] ?? "");
        settled = true;
        open = true;
        events.opened();
        front.opened(client, f.attempt);
        // Bytes either side sent past its head belong to the tunnel.
        if (got.length > end + 4) client.write(got.subarray(end + 4));
        if (head.length > 0) member.write(head);
        member.pipe(client);
        client.pipe(member);
    };
    /** The member answered the CONNECT with a status of its own: relayed (or 502), with Proxy-Status. */
    const refuse = (code: number, reason: string) => {
        events.refused();
        const details = `the member answered the CONNECT with ${code}${reason ? ` ${reason}` : ""}`;
        const status = relayedConnectStatus(code);
        if (status === 502) return fail({ code: "member_unreachable", type: "destination_unavailable", details }, code);
        settled = true;
        member.destroy();
        const type = status === 504 ? "connection_timeout" : "destination_unavailable";
        const relay = () => {
            if (!client.writable) return void client.destroy();
            front.failed(client, {
                memberId,
                attempt: f.attempt,
                failure: { code: "member_unreachable", type, details },
                memberStatus: code,
                relayed: { status, reason: status === code && reason ? reason : undefined },
            });
        };
        // A 5xx is the member's trouble reaching the target: another member may reach it. A 4xx (a
        // target the member's rules forbid, a bad request) would be the same anywhere: relayed.
        if (status < 500) return relay();
        f.memberFailed = true;
        events.failed(type, (retrying) => retrying || relay());
    };
    member.on("data", onData);
    member.on("error", (err: NodeJS.ErrnoException) => {
        if (!open) fail(memberFailure(err, "the CONNECT to the member"));
        else client.destroy();
    });
    member.once("close", () => {
        if (!open)
            return fail({
                code: "member_unreachable",
                type: "connection_terminated",
                details: "closed before answering",
            });
        // The member's side ended: the client gets what is still buffered, then the end.
        if (client.writable) client.end();
    });
    client.on("error", () => member.destroy());
    client.once("close", () => {
        clearTimeout(answerTimer);
        settled = true;
        if (!open || member.writableLength === 0) member.destroy();
        else member.end();
    });
}
