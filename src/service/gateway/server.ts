import * as http from "node:http";
import type { Socket } from "node:net";
import type { Logger } from "pino";
import type { StoredToken } from "../http/auth";
import type { Fleet } from "../fleet/fleet";
import type { ReleaseOutcome } from "../leases";
import { Admission, type Refusal, refusal } from "./admission";
import { answer, body, CONNECT_TARGET, cut, isAbsoluteHttp, poolLabel, proxyStatus, rawAnswer } from "./answers";
import { CLIENT_GONE, FLIGHT, type Flight, MARK, RESPONSE, type Tagged, type TaggedSocket, watchHead } from "./flight";
import { type MaybePromise, settle } from "../store/types";
import type { GatewayMetrics } from "../observe/gateway-metrics";
import { type BlockRules, DEFAULT_BLOCK_RULES, httpOutcome, tunnelOutcome } from "./outcome";
import { RecentServes, type ServedKey } from "./recent";
import { type ProtectedEndpoint, ProtectedTargets } from "./protected-targets";
import { gatewayWaitingRoom, type WaitingRoom } from "./waiting";

/** How long a gateway request waits for a busy pool by default: a few seconds, then 503 + Retry-After. */
export const DEFAULT_GATEWAY_WAIT_MS = 5000;

export interface GatewayOptions {
    /** @default 127.0.0.1 */
    host?: string;
    /** 0 picks a free port. */
    port: number;
    fleet: Fleet;
    tokens: StoredToken[];
    metrics: GatewayMetrics;
    log: Logger;
    /** Not ready (starting, stopping): every request is answered 503 not_ready. */
    ready: () => { ok: true } | { ok: false; reason: string };
    blockRules?: BlockRules;
    /**
     * Lease TTL of a gateway request: a request or tunnel still open after it is cut, so its member can
     * never be in two leases at once. @default 3600 (the lease manager's maximum)
     */
    leaseTtlSeconds?: number;
    /** Never relayed to (protected-targets.ts): the lease store. The gateway adds its own port itself. */
    protectedTargets?: ProtectedEndpoint[];
    /**
     * How long a request waits for a member when every one it could use is busy, first come first
     * served (waiting.ts); then 503 with Retry-After. 0 = answer 503 at once. @default 5000
     */
    waitMs?: number;
    /** Most requests waiting at once. @default 1000 */
    maxWaiting?: number;
}

/**
 * The rotating gateway: a forward proxy (plain HTTP and CONNECT) on proxy-chain whose every request
 * leases one member (src/service/leases chooses it, as for POST /v1/leases), is chained through that
 * member, and releases it with the outcome (outcome.ts) when the answer or tunnel ends, however it ends.
 */
export class Gateway {
    readonly recent = new RecentServes();
    private readonly admission: Admission;
    private readonly room: WaitingRoom;
    private readonly stopKicking: () => void;
    private readonly rules: BlockRules;
    private readonly ttlSeconds: number;
    private readonly agent = new http.Agent({ keepAlive: true });
    private server?: import("proxy-chain").Server;
    /** Requests and tunnels whose lease is not released yet; `close` waits for them. */
    private readonly open = new Set<Flight>();
    private drained?: () => void;
    private closing = false;
    private readonly guarded: ProtectedTargets;

    constructor(private readonly o: GatewayOptions) {
        this.ttlSeconds = o.leaseTtlSeconds ?? 3600;
        this.room = gatewayWaitingRoom(o.fleet, o.metrics, o.waitMs ?? DEFAULT_GATEWAY_WAIT_MS, o.maxWaiting);
        this.stopKicking = o.fleet.onRelease(() => this.room.kick());
        this.admission = new Admission(o.tokens, o.fleet, this.ttlSeconds, this.room);
        this.rules = o.blockRules ?? DEFAULT_BLOCK_RULES;
        this.guarded = new ProtectedTargets(o.protectedTargets);
    }

    /**
     * Hands the request on unless its target is protected (403 `forbidden_target`). Ordinary targets are
     * handed on at once; a target on a protected port waits for the check.
     */
    private guard(host: string, port: number, refuse: (reason: string) => void, go: () => void): void {
        if (!this.guarded.guards(port)) return go();
        void this.guarded.refusal(host, port).then((reason) => {
            if (!reason) return go();
            this.o.metrics.refused("forbidden_target");
            refuse(reason);
        });
    }

    async listen(): Promise<{ port: number; url: string }> {
        const { Server, RequestError } = require("proxy-chain") as typeof import("proxy-chain");
        const host = this.o.host ?? "127.0.0.1";
        const refuse = (r: Refusal) =>
            new RequestError(body(r.code, r.message), r.status, {
                ...r.headers,
                "Content-Type": "application/json; charset=utf-8",
                "X-Egress-Error": r.code,
                "Proxy-Status": proxyStatus(r.code),
            });
        const server = new Server({
            host,
            port: this.o.port,
            verbose: false,
            authRealm: "egress gateway",
            prepareRequestFunction: ({ request, username, password, hostname, isHttp }) => {
                const ready = this.o.ready();
                if (!ready.ok) throw refuse(refusal("not_ready", ready.reason, { "Retry-After": "5" }));
                const socket = request.socket as TaggedSocket;
                if (socket.destroyed) throw refuse(refusal("bad_request", "the client went away"));
                const onGone = (leave: () => void) => {
                    // Gone already (during a first attempt on the store): its close event came and went.
                    if (socket.destroyed) {
                        queueMicrotask(leave);
                        return () => undefined;
                    }
                    socket.once("close", leave);
                    return () => void socket.off("close", leave);
                };
                return settle(this.admission.admit({ username, password, hostname, onGone }), (got) => {
                    if (!got.ok) {
                        if (got.refusal.code === "none_available" || got.refusal.code === "store_unavailable")
                            this.o.metrics.request(poolLabel(username), isHttp ? "http" : "connect", "unavailable");
                        else
                            this.o.metrics.refused(
                                got.refusal.code as Exclude<
                                    Refusal["code"],
                                    "none_available" | "not_ready" | "store_unavailable"
                                >,
                            );
                        throw refuse(got.refusal);
                    }
                    const f: Flight = {
                        ...got.admitted,
                        kind: isHttp ? "http" : "connect",
                        startedAt: process.hrtime.bigint(),
                        socket,
                        read0: socket[MARK]?.read ?? 0,
                        written0: socket[MARK]?.written ?? 0,
                        tunnel: "none",
                        ended: false,
                    };
                    (request as Tagged)[FLIGHT] = f;
                    f.cut = setTimeout(() => {
                        f.cutByGateway = true;
                        socket.destroy();
                    }, this.ttlSeconds * 1000).unref();
                    this.open.add(f);
                    if (isHttp) {
                        const res = (request as Tagged)[RESPONSE]!;
                        watchHead(res, f, () =>
                            this.o.metrics.upstreamLatency(f.pool, Number(process.hrtime.bigint() - f.startedAt) / 1e9),
                        );
                        res.once("close", () => this.end(f));
                    } else {
                        socket.once("close", () => this.end(f));
                    }
                    // The client left while the request waited for a member (or for the store): no close
                    // event is coming, so the lease goes back now and proxy-chain is told to stop.
                    if (socket.destroyed) {
                        this.end(f);
                        throw refuse(refusal("bad_request", "the client went away"));
                    }
                    return { upstreamProxyUrl: f.lease.proxy.url, customTag: f, httpAgent: this.agent };
                });
            },
        });
        // proxy-chain's own listeners are replaced by ones that check the request first and then hand it
        // on: malformed requests get a JSON 400 (proxy-chain's would be plain text), and the response
        // object is kept for prepareRequestFunction, which proxy-chain does not give it.
        const raw = server.server;
        raw.removeAllListeners("request");
        raw.removeAllListeners("connect");
        raw.removeAllListeners("clientError");
        raw.on("clientError", (err: NodeJS.ErrnoException, socket: Socket) => {
            if (err.code === "ECONNRESET" || !socket.writable) return void socket.destroy();
            this.o.metrics.refused("bad_request");
            rawAnswer(socket, "bad_request", `not an HTTP request the gateway can read (${err.code ?? err.message})`);
        });
        raw.on("connection", (s: TaggedSocket) => {
            const gone = () => {
                s[CLIENT_GONE] = true;
            };
            s.once("end", gone);
            s.once("error", gone);
        });
        raw.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
            if (!isAbsoluteHttp(req.url)) {
                this.o.metrics.refused("bad_request");
                return answer(
                    res,
                    "bad_request",
                    `the gateway is a forward proxy: send the absolute URL (GET http://host/path) for http://, CONNECT host:port for https:// (got ${JSON.stringify(cut(req.url ?? ""))})`,
                );
            }
            (req as Tagged)[RESPONSE] = res;
            const target = new URL(req.url!);
            this.guard(
                target.hostname,
                Number(target.port || 80),
                (why) => answer(res, "forbidden_target", why),
                () => void server.onRequest(req, res),
            );
        });
        raw.on("connect", (req: http.IncomingMessage, socket: Socket, head: Buffer) => {
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
                () => void server.onConnect(req, socket as never, head),
            );
        });
        server.on("tunnelConnectResponded", ({ customTag }: { customTag: Flight }) => this.tunnel(customTag, "open"));
        server.on("tunnelConnectFailed", ({ customTag }: { customTag: Flight }) => this.tunnel(customTag, "refused"));
        server.on("requestFailed", ({ error }: { error: Error }) =>
            this.o.log.warn({ err: error }, "gateway request failed inside proxy-chain"),
        );
        await server.listen();
        this.server = server;
        this.guarded.add({ what: "the gateway itself", host, port: server.port });
        return { port: server.port, url: `http://${host}:${server.port}` };
    }

    /** Stops accepting; open requests and tunnels get `graceMs`, then are cut (their leases are released as they close). */
    async close(graceMs = 2000): Promise<void> {
        const server = this.server;
        if (!server) return;
        this.server = undefined;
        this.closing = true;
        this.room.close();
        this.stopKicking();
        const cutAll = setTimeout(() => server.closeConnections(), graceMs);
        const raw = server.server;
        const closed = server.close(false);
        raw.closeIdleConnections(); // keep-alive connections between requests; tunnels and answers in flight get the grace
        await closed;
        clearTimeout(cutAll);
        // The cut sockets' close events (which release the leases) come a tick or two later.
        if (this.open.size > 0)
            await new Promise<void>((r) => {
                this.drained = r;
                setTimeout(r, 1000).unref();
            });
        this.agent.destroy();
    }

    /**
     * POST /v1/blocks: the member that last served this client's (pool, session, target) through the
     * gateway rests for the target as after a `blocked` release. For answers the gateway cannot read
     * (inside a CONNECT tunnel) or blocks only the client recognises (a captcha page with status 200).
     */
    reportBlock(
        k: ServedKey,
    ): MaybePromise<{ ok: true; proxyId: string; until: number } | { ok: false; message: string }> {
        const target = k.target.toLowerCase();
        const served = this.recent.get({ ...k, target });
        const what = `pool "${k.pool}", target "${target}"${k.session ? `, session "${k.session}"` : ""}`;
        if (!served)
            return {
                ok: false,
                message: `the gateway served no request for ${what} with this token in the last ${this.recent.windowSeconds} s`,
            };
        return settle(this.o.fleet.reportBlocked(served.proxyId, target), (until) => {
            if (until === undefined)
                return {
                    ok: false as const,
                    message: `the member that served ${what} (${served.proxyId}) has left the stack`,
                };
            return { ok: true as const, proxyId: served.proxyId, until };
        });
    }

    private tunnel(f: Flight | undefined, state: "open" | "refused"): void {
        if (!f || f.ended) return;
        f.tunnel = state;
        this.o.metrics.upstreamLatency(f.pool, Number(process.hrtime.bigint() - f.startedAt) / 1e9);
    }

    /** Releases the lease with the outcome; runs once per request, whichever close comes first. */
    private end(f: Flight): void {
        if (f.ended) return;
        f.ended = true;
        clearTimeout(f.cut);
        f.leave();
        this.open.delete(f);
        if (this.open.size === 0) this.drained?.();
        const clientGone = (f.socket as TaggedSocket)[CLIENT_GONE] === true || f.cutByGateway === true || this.closing;
        const outcome: ReleaseOutcome =
            f.kind === "http"
                ? httpOutcome(
                      { status: f.status, rawHeaders: f.rawHeaders, complete: f.complete === true, clientGone },
                      this.rules,
                  )
                : tunnelOutcome({ member: f.tunnel, clientGone });
        const released = this.o.fleet.release(f.lease.id, outcome);
        // With a Redis store an outage fails the release: the member stays leased until the lease's TTL.
        if (released instanceof Promise)
            released.catch((e) =>
                this.o.log.warn(
                    { proxy: f.lease.proxy.id, error: (e as Error).message },
                    "releasing a gateway lease failed; its member stays leased until the lease's TTL",
                ),
            );
        this.o.metrics.request(f.pool, f.kind, outcome);
        const s = f.socket as TaggedSocket;
        this.o.metrics.bytes(f.pool, s.bytesRead - f.read0, s.bytesWritten - f.written0);
        s[MARK] = { read: s.bytesRead, written: s.bytesWritten };
        this.recent.record({ client: f.client, pool: f.pool, session: f.session, target: f.target }, f.lease.proxy.id);
        if (this.o.log.isLevelEnabled("debug"))
            this.o.log.debug(
                {
                    client: f.client,
                    pool: f.pool,
                    proxy: f.lease.proxy.id,
                    target: f.target,
                    kind: f.kind,
                    status: f.status,
                    outcome,
                    released: released instanceof Promise ? "pending" : released.ok,
                    ms: Number(process.hrtime.bigint() - f.startedAt) / 1e6,
                },
                "gateway request",
            );
    }
}
