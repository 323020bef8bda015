import * as http from "node:http";
import type { Socket } from "node:net";
import type { EventEmitter } from "node:events";
import { Admission, type Refusal, refusal } from "./admission";
import { answer, clientErrorAnswer, CONNECT_TARGET, cut, isAbsoluteHttp, poolLabel, rawAnswer } from "./answers";
import { CLIENT_GONE, type Flight, type TaggedSocket } from "./flight";
import { Flights } from "./flights";
import { forwardConnect } from "./forward-connect";
import { forwardHttp, MEMBER_ANSWER_MS } from "./forward-http";
import { isIdempotent, readBody, replayOf } from "./replay";
import { Retries } from "./retries";
import { MemberHops } from "./member-hop";
import { proxyCredentials } from "./proxy-auth";
import { settle } from "../store/types";
import { type BlockRules, DEFAULT_BLOCK_RULES, isBlocked } from "./outcome";
import { RecentServes, reportServedBlock, type ServedKey } from "./recent";
import { ProtectedTargets } from "./protected-targets";
import { gatewayWaitingRoom, type WaitingRoom } from "./waiting";
import { DEFAULT_GATEWAY_WAIT_MS, type GatewayOptions } from "./options";

/** The body of a request that has none: replayable as it is. */
const NO_BODY = Buffer.alloc(0);

/**
 * The rotating gateway: a forward proxy (plain HTTP and CONNECT) whose every request leases one member
 * (src/service/leases chooses it, as for POST /v1/leases), is relayed through that member
 * (forward-http.ts, forward-connect.ts), and releases it with the outcome (outcome.ts) when the answer
 * or tunnel ends, however it ends.
 */
export class Gateway {
    readonly recent = new RecentServes();
    private readonly admission: Admission;
    private readonly room: WaitingRoom;
    private readonly stopKicking: () => void;
    private readonly ttlSeconds: number;
    /** Each member's address, credentials and keep-alive agent (member-hop.ts). */
    private readonly hops = new MemberHops();
    private server?: http.Server;
    /** Every client connection, so shutdown can cut the ones still open after the grace (tunnels included). */
    private readonly sockets = new Set<Socket>();
    /** Requests and tunnels whose lease is not released yet; `close` waits for them. */
    private readonly flights: Flights;
    private readonly guarded: ProtectedTargets;
    private readonly retries: Retries;
    private readonly answerMs: number;
    private readonly rules: BlockRules;

    constructor(private readonly o: GatewayOptions) {
        this.ttlSeconds = o.leaseTtlSeconds ?? 3600;
        this.room = gatewayWaitingRoom(o.fleet, o.metrics, o.waitMs ?? DEFAULT_GATEWAY_WAIT_MS, o.maxWaiting);
        this.stopKicking = o.fleet.onRelease(() => this.room.kick());
        this.admission = new Admission(o.tokens, o.fleet, this.ttlSeconds, this.room, o.metrics.politeness);
        this.rules = o.blockRules ?? DEFAULT_BLOCK_RULES;
        this.flights = new Flights({ ...o, rules: this.rules, recent: this.recent });
        this.answerMs = o.memberAnswerMs ?? MEMBER_ANSWER_MS;
        this.retries = new Retries({
            fleet: o.fleet,
            flights: this.flights,
            ttlSeconds: this.ttlSeconds,
            room: this.room,
        });
        this.guarded = new ProtectedTargets(o.protectedTargets);
    }

    /** Hands the request on unless its target is protected (403 `forbidden_target`: protected-targets.ts). */
    private guard(host: string, port: number, refuse: (reason: string) => void, go: () => void): void {
        const refused = (why: string) => {
            this.o.metrics.refused("forbidden_target");
            refuse(why);
        };
        this.guarded.guard(host, port, refused, go);
    }

    async listen(): Promise<{ port: number; url: string }> {
        const host = this.o.host ?? "127.0.0.1";
        // A client gets headersTimeout for its head (then 408); its body and a tunnel may take as long as
        // they need (requestTimeout off), as through any forward proxy. Heads are checked every second.
        const server = http.createServer({ connectionsCheckingInterval: 1000, requestTimeout: 0 });
        server.headersTimeout = this.o.headersTimeoutMs ?? 10_000;
        server.on("clientError", (err: NodeJS.ErrnoException, socket: Socket) => {
            if (err.code === "ECONNRESET" || !socket.writable) return void socket.destroy();
            const { code, message } = clientErrorAnswer(err);
            this.o.metrics.refused(code);
            rawAnswer(socket, code, message);
        });
        server.on("connection", (s: TaggedSocket) => {
            this.sockets.add(s);
            s.once("close", () => this.sockets.delete(s));
            const gone = () => {
                s[CLIENT_GONE] = true;
            };
            s.once("end", gone);
            s.once("error", gone);
            // A tunnel's socket is no longer node's HTTP server's: its errors must not go unheard.
            s.on("error", () => undefined);
        });
        server.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
            if (!isAbsoluteHttp(req.url)) {
                this.o.metrics.refused("bad_request");
                return answer(
                    res,
                    "bad_request",
                    `the gateway is a forward proxy: send the absolute URL (GET http://host/path) for http://, CONNECT host:port for https:// (got ${JSON.stringify(cut(req.url ?? ""))})`,
                );
            }
            const target = new URL(req.url!);
            const admit = (body: Buffer | undefined) =>
                this.guard(
                    target.hostname,
                    Number(target.port || 80),
                    (why) => answer(res, "forbidden_target", why),
                    () =>
                        this.enter(req, "http", target.hostname, res, body, {
                            refuse: (r) => answer(res, r.code, r.message, r.headers),
                            go: (f) => this.forwardHttp(req, res, f),
                        }),
                );
            // A small body of an idempotent request is read whole first, so a retry can send it again.
            const replay = replayOf(req.method, req.headers);
            if (replay === "buffer") return readBody(req, (b) => b && admit(b));
            admit(replay === "empty" ? NO_BODY : undefined);
        });
        server.on("connect", (req: http.IncomingMessage, socket: Socket, head: Buffer) => {
            const m = CONNECT_TARGET.exec(req.url ?? "");
            if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) {
                this.o.metrics.refused("bad_request");
                return rawAnswer(
                    socket,
                    "bad_request",
                    `CONNECT needs host:port with a port from 1 to 65535 (got ${JSON.stringify(cut(req.url ?? ""))})`,
                );
            }
            this.guard(
                m[1],
                Number(m[2]),
                (why) => rawAnswer(socket, "forbidden_target", why),
                () =>
                    // Until the tunnel opens, nothing of the client's went anywhere: a CONNECT is replayable.
                    this.enter(req, "connect", m[1], socket, NO_BODY, {
                        refuse: (r) => rawAnswer(socket, r.code, r.message, r.headers),
                        go: (f) => this.forwardConnect(req, socket, head, f),
                    }),
            );
        });
        await new Promise<void>((resolve, reject) => {
            server.once("error", reject);
            server.listen(this.o.port, host, () => {
                server.off("error", reject);
                resolve();
            });
        });
        this.server = server;
        const port = (server.address() as { port: number }).port;
        this.guarded.add({ what: "the gateway itself", host, port });
        return { port, url: `http://${host}:${port}` };
    }

    /** One attempt of a plain request; a failed one may hand the request to another member (retries.ts). */
    private forwardHttp(req: http.IncomingMessage, res: http.ServerResponse, f: Flight): void {
        forwardHttp(req, res, f, this.hops.of(f.lease.proxy.url), {
            head: () => this.flights.answered(f),
            failed: (why, then) => this.retries.failed(f, why, then, (next) => this.forwardHttp(req, res, next)),
            // A block is retried only for a method the origin may see twice: this one it already saw.
            retryBlock: (status, raw) =>
                this.retries.mayRetryBlock(f) && isIdempotent(req.method) && isBlocked(status, raw, this.rules),
            answerMs: this.answerMs,
        });
    }

    /** One attempt of a tunnel: retried on another member only while it has not opened. */
    private forwardConnect(req: http.IncomingMessage, socket: Socket, head: Buffer, f: Flight): void {
        forwardConnect(req, socket, head, f, this.hops.of(f.lease.proxy.url), {
            opened: () => this.flights.tunnel(f, "open"),
            refused: () => this.flights.tunnel(f, "refused"),
            failed: (why, then) =>
                this.retries.failed(f, why, then, (next) => this.forwardConnect(req, socket, head, next)),
            answerMs: this.answerMs,
        });
    }

    /**
     * Admits one request or tunnel (readiness, credentials, a lease: admission.ts) and hands its Flight
     * to `go`, or answers the refusal. The lease is released when `closes` (the answer, or the tunnel's
     * socket) closes, however that comes about. `body`: what a retry would send again (undefined: the
     * request streams its body and is never replayed).
     */
    private enter(
        req: http.IncomingMessage,
        kind: Flight["kind"],
        hostname: string,
        closes: EventEmitter,
        body: Buffer | undefined,
        to: { refuse(r: Refusal): void; go(f: Flight): void },
    ): void {
        const ready = this.o.ready();
        if (!ready.ok) return to.refuse(refusal("not_ready", ready.reason, { "Retry-After": "5" }));
        const socket = req.socket as TaggedSocket;
        if (socket.destroyed) return to.refuse(refusal("bad_request", "the client went away"));
        const credentials = proxyCredentials(req.headers["proxy-authorization"]);
        if (!credentials.ok) {
            this.o.metrics.refused("bad_request");
            return to.refuse(refusal("bad_request", credentials.message));
        }
        const { username, password } = credentials;
        const onGone = (leave: () => void) => {
            // Gone already (during a first attempt on the store): its close event came and went.
            if (socket.destroyed) {
                queueMicrotask(leave);
                return () => undefined;
            }
            socket.once("close", leave);
            return () => void socket.off("close", leave);
        };
        const admitted = settle(this.admission.admit({ username, password, hostname, onGone }), (got) => {
            if (!got.ok) {
                if (got.refusal.code === "none_available" || got.refusal.code === "store_unavailable")
                    this.o.metrics.request(poolLabel(username), kind, "unavailable");
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
            const f = this.flights.launch(got.admitted, {
                kind,
                socket,
                closes,
                ttlSeconds: this.ttlSeconds,
                replayable,
                body: kind === "http" ? body : undefined,
            });
            // The client left while the request waited for a member (or for the store): no close
            // event is coming, so the lease goes back now.
            if (socket.destroyed) {
                this.flights.end(f);
                return to.refuse(refusal("bad_request", "the client went away"));
            }
            to.go(f);
        });
        if (admitted instanceof Promise) admitted.catch((e: Error) => this.failed(socket, e));
    }

    /** A bug on the way to a member: the client gets a 500, the log the stack. */
    private failed(socket: Socket, error: Error): void {
        this.o.log.warn({ err: error }, "gateway request failed");
        if (socket.writable)
            rawAnswer(socket, "internal", "the gateway failed on this request; its log has the details");
        else socket.destroy();
    }

    /** Stops accepting; open requests and tunnels get `graceMs`, then are cut (their leases are released as they close). */
    async close(graceMs = 2000): Promise<void> {
        const server = this.server;
        if (!server) return;
        this.server = undefined;
        this.flights.closing = true;
        this.room.close();
        this.stopKicking();
        const cutAll = setTimeout(() => {
            for (const s of this.sockets) s.destroy();
        }, graceMs);
        const closed = new Promise<void>((r) => server.close(() => r()));
        server.closeIdleConnections(); // keep-alive connections between requests; tunnels and answers in flight get the grace
        await closed;
        clearTimeout(cutAll);
        // The cut sockets' close events (which release the leases) come a tick or two later.
        await this.flights.drain(1000);
        this.hops.destroy();
    }

    /**
     * POST /v1/blocks: the member that last served this client's (pool, session, target) through the
     * gateway rests for the target as after a `blocked` release (recent.ts).
     */
    reportBlock(k: ServedKey): ReturnType<typeof reportServedBlock> {
        return reportServedBlock(this.recent, this.o.fleet, k);
    }
}
