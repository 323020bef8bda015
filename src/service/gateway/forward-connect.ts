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
    new ConnectAttempt(target, client, head, f, hop, events, front).start();
}

/**
 * One CONNECT through one member, on a connection of its own: the member's answer is read up to its
 * head; a 200 opens the tunnel (the two sockets piped), anything else is relayed or retried.
 */
class ConnectAttempt {
    private readonly memberId: string;
    private readonly member: net.Socket;
    /** The tunnel is open: both sides are piped. */
    private open = false;
    /** The attempt's outcome is decided (opened, failed, refused, or the client went away). */
    private settled = false;
    private answerTimer: NodeJS.Timeout | undefined;
    /** The member's answer so far, up to its head's end. */
    private got: Buffer = Buffer.alloc(0);
    private readonly onData = (chunk: Buffer) => this.read(chunk);

    constructor(
        private readonly target: string,
        private readonly client: net.Socket,
        private readonly head: Buffer,
        private readonly f: Flight,
        private readonly hop: MemberHop,
        private readonly events: TunnelEvents,
        private readonly front: TunnelFront,
    ) {
        this.memberId = f.lease.proxy.id;
        this.member = net.connect({ host: hop.host, port: hop.port });
        this.member.setNoDelay(true);
    }

    start(): void {
        const { member, client } = this;
        timeConnect(member, (err) => this.fail(memberFailure(err, "connecting to the member")));
        member.once("connect", () => this.ask());
        member.on("data", this.onData);
        member.on("error", (err: NodeJS.ErrnoException) => {
            if (!this.open) this.fail(memberFailure(err, "the CONNECT to the member"));
            else client.destroy();
        });
        member.once("close", () => {
            if (!this.open)
                return this.fail({
                    code: "member_unreachable",
                    type: "connection_terminated",
                    details: "closed before answering",
                });
            // The member's side ended: the client gets what is still buffered, then the end.
            if (client.writable) client.end();
        });
        client.on("error", () => member.destroy());
        client.once("close", () => {
            clearTimeout(this.answerTimer);
            this.settled = true;
            if (!this.open || member.writableLength === 0) member.destroy();
            else member.end();
        });
    }

    /** Connected: the CONNECT goes out, and its answer has `events.answerMs` to come. */
    private ask(): void {
        this.answerTimer = setTimeout(
            () =>
                this.fail({ code: "member_timeout", type: "connection_timeout", details: "no answer to the CONNECT" }),
            this.events.answerMs,
        ).unref();
        const auth = this.hop.authorization ? `Proxy-Authorization: ${this.hop.authorization}\r\n` : "";
        this.member.write(`CONNECT ${this.target} HTTP/1.1\r\nHost: ${this.target}\r\n${auth}\r\n`);
    }

    /** The member's answer, until its head is whole: then the tunnel opens, or the answer is relayed. */
    private read(chunk: Buffer): void {
        this.got = this.got.length === 0 ? chunk : Buffer.concat([this.got, chunk]);
        const got = this.got;
        const end = got.indexOf(HEAD_END);
        if (end < 0) {
            if (got.length > MAX_ANSWER_HEAD)
                this.fail({
                    code: "member_unreachable",
                    type: "http_response_header_section_size",
                    details: "CONNECT answer",
                });
            return;
        }
        this.member.off("data", this.onData);
        this.member.pause();
        clearTimeout(this.answerTimer);
        const status = /^HTTP\/1\.[01] (\d{3})(?: ([^\r\n]*))?\r\n/.exec(got.subarray(0, end + 2).toString("latin1"));
        if (!status)
            return this.fail({
                code: "member_unreachable",
                type: "http_protocol_error",
                details: "unreadable CONNECT answer",
            });
        const code = Number(status[1]);
        if (code !== 200) return this.refuse(code, status[2] ?? "");
        this.opened(got.subarray(end + 4));
    }

    /** 200: the tunnel opens; bytes either side sent past its head belong to it. */
    private opened(past: Buffer): void {
        const { member, client } = this;
        this.settled = true;
        this.open = true;
        this.events.opened();
        this.front.opened(client, this.f.attempt);
        if (past.length > 0) client.write(past);
        if (this.head.length > 0) member.write(this.head);
        member.pipe(client);
        client.pipe(member);
    }

    /** The member answered the CONNECT with a status of its own: relayed (or 502), with Proxy-Status. */
    private refuse(code: number, reason: string): void {
        this.events.refused();
        const details = `the member answered the CONNECT with ${code}${reason ? ` ${reason}` : ""}`;
        const status = relayedConnectStatus(code);
        if (status === 502)
            return this.fail({ code: "member_unreachable", type: "destination_unavailable", details }, code);
        this.settled = true;
        this.member.destroy();
        const type = status === 504 ? "connection_timeout" : "destination_unavailable";
        const relay = () => {
            if (!this.client.writable) return void this.client.destroy();
            this.front.failed(this.client, {
                memberId: this.memberId,
                attempt: this.f.attempt,
                failure: { code: "member_unreachable", type, details },
                memberStatus: code,
                relayed: { status, reason: status === code && reason ? reason : undefined },
            });
        };
        // A 5xx is the member's trouble reaching the target: another member may reach it. A 4xx (a
        // target the member's rules forbid, a bad request) would be the same anywhere: relayed.
        if (status < 500) return relay();
        this.f.memberFailed = true;
        this.events.failed(type, (retrying) => retrying || relay());
    }

    /** Ends the attempt before the tunnel opened: the client gets `failure`'s answer (if it is still there). */
    private fail(failure: MemberFailure, memberStatus?: number): void {
        if (this.settled) return;
        this.settled = true;
        this.f.memberFailed = true;
        clearTimeout(this.answerTimer);
        this.member.destroy();
        this.events.failed(failure.type, (retrying) => {
            if (retrying) return;
            if (!this.client.writable) return void this.client.destroy();
            this.front.failed(this.client, { memberId: this.memberId, attempt: this.f.attempt, failure, memberStatus });
        });
    }
}
