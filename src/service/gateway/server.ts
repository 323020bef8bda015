import type * as net from "node:net";
import * as tls from "node:tls";
import type { Socket } from "node:net";
import { Admission, type Refusal, refusal } from "./admission";
import { Entry } from "./entry";
import { absoluteHttp, CONNECT_TARGET, cut, rawAnswer } from "./answers";
import type { Flight } from "./flight";
import { createHttpDoor, type HttpDoor, listenOn } from "./http-door";
import type { Exchange } from "./exchange";
import { createSocksServer } from "./socks";
import { Flights } from "./flights";
import { forwardConnect, HTTP_TUNNEL_FRONT, type TunnelRequest } from "./forward-connect";
import { MEMBER_ANSWER_MS, relayHttp } from "./relay-http";
import { isIdempotent, replayOfHead } from "./replay";
import { Retries } from "./retries";
import { MemberHops } from "./member-hop";
import { connectionCredentials, proxyCredentials } from "./proxy-auth";
import { Doors } from "./doors";
import type { GatewayRefusal } from "../observe/gateway-metrics";
import { type BlockRules, DEFAULT_BLOCK_RULES, isBlocked } from "./outcome";
import { RecentServes, reportServedBlock, type ServedKey } from "./recent";
import { ProtectedTargets } from "./protected-targets";
import { gatewayWaitingRoom, type WaitingRoom } from "./waiting";
import { DEFAULT_GATEWAY_WAIT_MS, type GatewayAddresses, type GatewayOptions } from "./options";

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
    /** The listening front doors (HTTP, SOCKS5). */
    private servers: net.Server[] = [];
    /** The HTTP doors among them: shutdown closes their idle connections. */
    private httpDoors: HttpDoor[] = [];
    /** Every client connection, so shutdown can cut the ones still open after the grace (tunnels included). */
    private readonly sockets = new Set<Socket>();
    /** Requests and tunnels whose lease is not released yet; `close` waits for them. */
    private readonly flights: Flights;
    private readonly guarded: ProtectedTargets;
    private readonly retries: Retries;
    private readonly answerMs: number;
    private readonly rules: BlockRules;
    private readonly entry: Entry;
    /** Allowed sources and sticky ports (doors.ts). */
    private readonly doors: Doors;

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
            log: o.log,
        });
        this.guarded = new ProtectedTargets(o.protectedTargets);
        this.doors = new Doors(o.allow, o.stickyPorts);
        this.entry = new Entry({
            ...o,
            admission: this.admission,
            flights: this.flights,
            ttlSeconds: this.ttlSeconds,
            door: (s) => this.doors.of(s),
        });
    }

    /** Hands the request on unless its target is protected (403 `forbidden_target`: protected-targets.ts). */
    private guard(host: string, port: number, refuse: (reason: string) => void, go: () => void): void {
        const refused = (why: string) => {
            this.o.metrics.refused("forbidden_target");
            refuse(why);
        };
        this.guarded.guard(host, port, refused, go);
    }

    /**
     * Listens on each front door configured: the plain HTTP proxy (`port`), SOCKS5 (`socksPort`) and
     * the HTTP proxy over TLS (`tlsPort`), all on `host`. Each is a protected target: the gateway never relays to itself.
     */
    async listen(): Promise<GatewayAddresses> {
        const host = this.o.host ?? "127.0.0.1";
        const at: GatewayAddresses = {};
        const door = (files?: { cert: Buffer; key: Buffer }) => {
            const d = createHttpDoor(this, this.o, this.sockets, files);
            this.httpDoors.push(d);
            return d.server;
        };
        const open = async (server: net.Server, port: number, what: string) => {
            await listenOn(server, port, host);
            this.servers.push(server);
            const bound = (server.address() as net.AddressInfo).port;
            this.guarded.add({ what, host, port: bound });
            return bound;
        };
        // Sticky ports first: a port 0 below cannot then land inside a sticky range.
        for (const r of this.o.stickyPorts ?? []) {
            for (let p = r.from; p <= r.to; p++) await open(door(), p, "a sticky port of the gateway");
            (at.sticky ??= []).push({ from: r.from, to: r.to, ...(r.pool && { pool: r.pool }) });
        }
        if (this.o.port !== undefined) {
            at.port = await open(door(), this.o.port, "the gateway itself");
            at.url = `http://${host}:${at.port}`;
        }
        if (this.o.socksPort !== undefined) {
            const socks = createSocksServer(
                {
                    gateway: this,
                    metrics: this.o.metrics,
                    log: this.o.log,
                    handshakeMs: this.o.headersTimeoutMs ?? 10_000,
                },
                this.sockets,
            );
            at.socksPort = await open(socks, this.o.socksPort, "the gateway's SOCKS5 port");
            at.socksUrl = `socks5h://${host}:${at.socksPort}`;
        }
        if (this.o.tlsPort !== undefined) {
            if (!this.o.tls) throw new Error("the gateway's TLS port needs a certificate and key (`tls`)");
            at.tlsPort = await open(door(this.o.tls), this.o.tlsPort, "the gateway's TLS port");
            at.tlsUrl = `https://${host}:${at.tlsPort}`;
        }
        return at;
    }

    /** The TLS listeners, for a certificate reload (`tls.Server#setSecureContext`). */
    tlsServers(): tls.Server[] {
        return this.servers.filter((s): s is tls.Server => s instanceof tls.Server);
    }

    /** A plain HTTP request (absolute-form) at the HTTP front door (http-door.ts). */
    request(x: Exchange): void {
        const url = x.head.target;
        const target = absoluteHttp(url);
        if (!target) {
            this.o.metrics.refused("bad_request");
            return x.refuse(
                "bad_request",
                `the gateway is a forward proxy: send the absolute URL (GET http://host/path) for http://, CONNECT host:port for https:// (got ${JSON.stringify(cut(url))})`,
            );
        }
        const admit = (body: Buffer | undefined) =>
            this.guard(
                target.hostname,
                Number(target.port || 80),
                (why) => x.refuse("forbidden_target", why),
                () =>
                    this.entry.enter(
                        x.socket,
                        connectionCredentials(x.socket, x.header("proxy-authorization")),
                        "http",
                        target.hostname,
                        x,
                        body,
                        {
                            refuse: (r) => x.refuse(r.code, r.message, r.headers),
                            go: (f) => this.forwardHttp(x, f),
                        },
                    ),
            );
        // A small body of an idempotent request is read whole first, so a retry can send it again.
        const replay = replayOfHead(x.head);
        if (replay === "buffer") return x.readWhole(admit);
        admit(replay === "empty" ? NO_BODY : undefined);
    }

    /** An HTTP CONNECT at the HTTP front door: its `host:port` checked, then the tunnel path (`connect`). */
    httpConnect(target: string, proxyAuthorization: string | undefined, socket: Socket, rest: Buffer): void {
        const m = CONNECT_TARGET.exec(target);
        if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) {
            this.o.metrics.refused("bad_request");
            return rawAnswer(
                socket,
                "bad_request",
                `CONNECT needs host:port with a port from 1 to 65535 (got ${JSON.stringify(cut(target))})`,
            );
        }
        this.connect({
            socket,
            credentials: proxyCredentials(proxyAuthorization),
            host: m[1],
            port: Number(m[2]),
            head: rest,
            front: HTTP_TUNNEL_FRONT,
            refuse: (r) => rawAnswer(socket, r.code, r.message, r.headers),
        });
    }

    /** One attempt of a plain request; a failed one may hand the request to another member (retries.ts). */
    private forwardHttp(x: Exchange, f: Flight): void {
        relayHttp(x, f, this.hops.of(f.lease.proxy.url), {
            head: () => this.flights.answered(f),
            failed: (why, then) => this.retries.failed(f, why, then, (next) => this.forwardHttp(x, next)),
            // A block is retried only for a method the origin may see twice: this one it already saw.
            retryBlock: (status, raw) =>
                this.retries.mayRetryBlock(f) && isIdempotent(x.head.method) && isBlocked(status, raw, this.rules),
            answerMs: this.answerMs,
        });
    }

    /**
     * A tunnel from any front door (the HTTP CONNECT above, SOCKS5: socks.ts): its target guarded, then
     * admitted (credentials, a lease) and forwarded through the member; `t.refuse` answers a refusal.
     */
    connect(t: TunnelRequest): void {
        this.guard(
            t.host,
            t.port,
            (why) => t.refuse(refusal("forbidden_target", why)),
            () =>
                // Until the tunnel opens, nothing of the client's went anywhere: a CONNECT is replayable.
                this.entry.enter(t.socket, t.credentials, "connect", t.host, t.socket, NO_BODY, {
                    refuse: t.refuse,
                    go: (f) => this.forwardConnect(t, f),
                    internal: t.internal,
                }),
        );
    }

    /** Checks credentials alone (admission.ts), for a front door that authenticates before its request. */
    credentials(username: string, password: string): Refusal | undefined {
        const checked = this.admission.credentials(username, password);
        if (checked.ok) return undefined;
        this.o.metrics.refused(checked.refusal.code as GatewayRefusal);
        return checked.refusal;
    }

    /** Whether `socket` comes from an allowed source (SOCKS5 then accepts no login: socks.ts). */
    allows(socket: Socket): boolean {
        return this.doors.allows(socket);
    }

    /** One attempt of a tunnel: retried on another member only while it has not opened. */
    private forwardConnect(t: TunnelRequest, f: Flight): void {
        const target = `${t.host}:${t.port}`;
        forwardConnect(
            target,
            t.socket,
            t.head,
            f,
            this.hops.of(f.lease.proxy.url),
            {
                opened: () => this.flights.tunnel(f, "open"),
                refused: () => this.flights.tunnel(f, "refused"),
                failed: (why, then) => this.retries.failed(f, why, then, (next) => this.forwardConnect(t, next)),
                answerMs: this.answerMs,
            },
            t.front,
        );
    }

    /** Stops accepting; open requests and tunnels get `graceMs`, then are cut (their leases are released as they close). */
    async close(graceMs = 2000): Promise<void> {
        const servers = this.servers;
        if (this.flights.closing) return;
        this.servers = [];
        this.flights.closing = true;
        this.room.close();
        this.stopKicking();
        const cutAll = setTimeout(() => {
            for (const s of this.sockets) s.destroy();
        }, graceMs);
        const closed = Promise.all(servers.map((server) => new Promise<void>((r) => server.close(() => r()))));
        // Keep-alive connections between requests; tunnels and answers in flight get the grace.
        for (const d of this.httpDoors.splice(0)) d.closeIdle();
        await closed;
        clearTimeout(cutAll);
        // The cut sockets' close events (which release the leases) come a tick or two later.
        await this.flights.drain(1000);
        this.hops.destroy();
    }

    /**
     * POST /v1/blocks: member `proxyId` (or, unset, the last one) that served this client's (pool, session,
     * target) through the gateway rests for the target as after a `blocked` release (recent.ts).
     */
    reportBlock(k: ServedKey, proxyId?: string): ReturnType<typeof reportServedBlock> {
        return reportServedBlock(this.recent, this.o.fleet, k, proxyId);
    }
}
