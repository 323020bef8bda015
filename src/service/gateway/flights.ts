import type { EventEmitter } from "node:events";
import type { Socket } from "node:net";
import type { Logger } from "pino";
import type { Admitted } from "./admission";
import type { Fleet } from "../fleet/fleet";
import type { ReleaseOutcome } from "../leases";
import type { GatewayMetrics } from "../observe/gateway-metrics";
import { BLOCKED, CLIENT_GONE, type Flight, MARK, type TaggedSocket } from "./flight";
import { type BlockRules, httpOutcome, tunnelOutcome } from "./outcome";
import type { RecentServes } from "./recent";

/**
 * The gateway's requests and tunnels in flight, and the one place each is released: with its outcome
 * (outcome.ts), its metrics, its byte counts and its log line, exactly once however it ended.
 */
export class Flights {
    private readonly open = new Set<Flight>();
    private drained?: () => void;
    /** Shutting down: what is cut from now on is not the members' fault. */
    closing = false;

    constructor(
        private readonly o: {
            fleet: Fleet;
            metrics: GatewayMetrics;
            log: Logger;
            rules: BlockRules;
            recent: RecentServes;
        },
    ) {}

    /**
     * The flight of one attempt: `a`'s lease, released when `closes` closes (or earlier, when another
     * member takes the request over). A retry's attempt continues `prev`: its byte marks (the request's
     * bytes are counted once, at its last attempt), its tried members and its body.
     */
    launch(
        a: Admitted,
        how: {
            kind: Flight["kind"];
            socket: Socket;
            closes: EventEmitter;
            ttlSeconds: number;
            replayable: boolean;
            body?: Buffer;
        },
        prev?: Flight,
    ): Flight {
        const socket = how.socket as TaggedSocket;
        // Every field named (no spread of `a`): one object shape for every flight, made in one step.
        const f: Flight = {
            client: a.client,
            lease: a.lease,
            pool: a.pool,
            session: a.session,
            target: a.target,
            leave: a.leave,
            ask: a.ask,
            retries: a.retries,
            kind: how.kind,
            closes: how.closes,
            startedAt: performance.now(),
            socket,
            read0: prev?.read0 ?? socket[MARK]?.read ?? 0,
            written0: prev?.written0 ?? socket[MARK]?.written ?? 0,
            tunnel: "none",
            ended: false,
            attempt: (prev?.attempt ?? 0) + 1,
            tried: prev === undefined ? [a.lease.proxy.id] : [...prev.tried, a.lease.proxy.id],
            blockRetries: (prev?.blockRetries ?? 0) + (prev?.retriedFor === BLOCKED ? 1 : 0),
            replayable: how.replayable,
            body: how.body,
        };
        f.cut = setTimeout(() => {
            f.cutByGateway = true;
            socket.destroy();
        }, how.ttlSeconds * 1000).unref();
        this.open.add(f);
        how.closes.once("close", () => this.end(f));
        return f;
    }

    /** Resolves once every open flight was released, or after `ms` (a close event that never comes). */
    async drain(ms: number): Promise<void> {
        if (this.open.size === 0) return;
        await new Promise<void>((r) => {
            this.drained = r;
            setTimeout(r, ms).unref();
        });
    }

    /** The member's head arrived (an answer, or its answer to the CONNECT): the upstream latency. */
    answered(f: Flight): void {
        this.o.metrics.upstreamLatency(f.pool, (performance.now() - f.startedAt) / 1e3);
    }

    tunnel(f: Flight, state: "open" | "refused"): void {
        if (f.ended) return;
        f.tunnel = state;
        this.answered(f);
    }

    /** The outcome `f`'s lease is released with, from how its request or tunnel went (outcome.ts). */
    outcome(f: Flight): ReleaseOutcome {
        const clientGone =
            f.memberFailed !== true &&
            ((f.socket as TaggedSocket)[CLIENT_GONE] === true || f.cutByGateway === true || this.closing);
        return f.kind === "http"
            ? httpOutcome(
                  { status: f.status, rawHeaders: f.rawHeaders, complete: f.complete === true, clientGone },
                  this.o.rules,
              )
            : tunnelOutcome({ member: f.tunnel, clientGone });
    }

    /** Releases the lease with the outcome; runs once per request, whichever close comes first. */
    end(f: Flight): void {
        if (f.ended) return;
        f.ended = true;
        clearTimeout(f.cut);
        f.leave();
        this.open.delete(f);
        if (this.open.size === 0) this.drained?.();
        const outcome = this.outcome(f);
        const released = f.handedOver ? undefined : this.o.fleet.release(f.lease.id, outcome);
        // With a Redis store an outage fails the release: the member stays leased until the lease's TTL.
        if (released instanceof Promise)
            released.catch((e) =>
                this.o.log.warn(
                    { proxy: f.lease.proxy.id, error: (e as Error).message },
                    "releasing a gateway lease failed; its member stays leased until the lease's TTL",
                ),
            );
        this.o.metrics.attempt(f.pool, f.kind, outcome);
        // A retried attempt is one step of its request: the request's outcome, bytes and member are its last attempt's.
        if (f.retriedFor !== undefined) this.o.metrics.retried(f.pool, f.retriedFor);
        else {
            this.o.metrics.request(f.pool, f.kind, outcome);
            const s = f.socket as TaggedSocket;
            this.o.metrics.bytes(f.pool, s.bytesRead - f.read0, s.bytesWritten - f.written0);
            s[MARK] = { read: s.bytesRead, written: s.bytesWritten };
            this.o.recent.record(
                { client: f.client, pool: f.pool, session: f.session, target: f.target },
                f.lease.proxy.id,
            );
        }
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
                    attempt: f.attempt,
                    ...(f.retriedFor !== undefined && { retriedFor: f.retriedFor }),
                    released:
                        released === undefined ? "handed over" : released instanceof Promise ? "pending" : released.ok,
                    ms: performance.now() - f.startedAt,
                },
                f.retriedFor === undefined ? "gateway request" : "gateway attempt retried on another member",
            );
    }
}
