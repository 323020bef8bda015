import type { Logger } from "pino";
import { GATEWAY_RETRIES_DEFAULT } from "../../model";
import type { Fleet, FleetAcquire } from "../fleet/fleet";
import type { Admitted } from "./admission";
import { BLOCKED, type Flight } from "./flight";
import type { Flights } from "./flights";
import { waitingLine, worthWaiting, type WaitingRoom } from "./waiting";

/**
 * Retries on another member (issue 21): an attempt whose member failed it before answering hands its
 * request to a member not tried yet, while the request is replayable (replay.ts; a CONNECT until its
 * tunnel opens) and the pool's `gateway.retries` (lowered by the username's `_retries_<n>`) allows.
 * The next lease is taken in the same store step that ends the failed one (AcquireRequest.replaces):
 * the failed attempt's politeness slot is the retry's, so a site at its `maxConcurrency` does not refuse
 * the retry for the slot it is leaving, and no other request takes that slot in between. `exclude` keeps
 * the members tried so far out. Every attempt is released with its own outcome (the failed one `error`).
 * When no other member is free now, a member failure's retry waits in its request's line for the
 * gateway's wait bound, as a first attempt does (waiting.ts): a member that dies while the pool is busy
 * must not turn into 502s the crawler would not have seen a moment later. Past the bound, or without
 * waiting, the failure is given back. A block's retry does not wait: the origin's answer is held unread
 * meanwhile, and relaying it is an answer too.
 * An origin's block (reason BLOCKED, `gateway.retryOnBlock`) has its own budget: a member failure
 * and a block are different bad luck, and a pool may want one retried and not the other.
 */
export class Retries {
    constructor(
        private readonly o: {
            fleet: Pick<Fleet, "acquire" | "release" | "poolConfigs">;
            /** Where the failed attempt ends and the next one starts; `closing` (shutdown): no new attempts. */
            flights: Pick<Flights, "end" | "launch" | "closing" | "outcome">;
            /** The lease TTL of a gateway request (server.ts). */
            ttlSeconds: number;
            /** Where a retry waits when no other member is free now; unset: it gives the failure back. */
            room?: Pick<WaitingRoom, "enabled" | "wait">;
            /** Where a member failure given back to its client is told, with why no retry took it over. */
            log?: Pick<Logger, "info">;
        },
    ) {}

    /**
     * How many retries `f`'s request may have for member failures (`error`) or for blocks: the pool's
     * bound, lowered by the username's `_retries_<n>`.
     */
    budget(f: Pick<Flight, "pool" | "retries">, kind: "error" | "block" = "error"): number {
        const pool = this.o.fleet.poolConfigs().find((p) => p.name === f.pool);
        const bound =
            kind === "block" ? (pool?.gateway?.retryOnBlock ?? 0) : (pool?.gateway?.retries ?? GATEWAY_RETRIES_DEFAULT);
        return f.retries === undefined ? bound : Math.min(bound, f.retries);
    }

    /** Whether a block of `f`'s answer would be retried (its block budget is not used up): checked before the answer is read. */
    mayRetryBlock(f: Flight): boolean {
        return f.replayable && !f.ended && !this.o.flights.closing && f.blockRetries < this.budget(f, "block");
    }

    /**
     * `f` failed for `reason` before its answer. Either another member takes the request over (`then(true)`,
     * then `run` gets the new attempt's flight) or `then(false)`: the caller answers the failure.
     */
    failed(f: Flight, reason: string, then: (retrying: boolean) => void, run: (next: Flight) => void): void {
        const blocked = reason === BLOCKED;
        const used = blocked ? f.blockRetries : f.attempt - 1 - f.blockRetries;
        // A member failure answered to the client (a 502 or 504) says in the log why no member took it over.
        const giveBack = (why: string) => {
            if (!blocked)
                this.o.log?.info(
                    { pool: f.pool, proxy: f.lease.proxy.id, attempt: f.attempt, reason, why },
                    `a member failed a gateway request and no retry took it over: ${why}`,
                );
            then(false);
        };
        if (!f.replayable) return giveBack("its request cannot be sent again");
        if (f.ended) return then(false);
        if (this.o.flights.closing) return giveBack("the gateway is shutting down");
        if (used >= this.budget(f, blocked ? "block" : "error")) return giveBack(`its ${used} retries are used up`);
        let got;
        try {
            const replaces = { leaseId: f.lease.id, outcome: this.o.flights.outcome(f) };
            got = this.o.fleet.acquire({ ...f.ask, exclude: f.tried, replaces }, null);
        } catch (e) {
            return giveBack(`the next lease failed: ${(e as Error).message}`);
        }
        const take = (g: FleetAcquire) => {
            if (!g.ok) return giveBack(`no other member: ${g.reason}`);
            // The client left, or its request ended meanwhile: nobody to serve; the unused lease goes back.
            if (f.ended || f.socket.destroyed) {
                void Promise.resolve(this.o.fleet.release(g.lease.id, "ok")).catch(() => undefined);
                return then(false);
            }
            f.retriedFor = reason;
            // The client's in-flight slot moves to the next attempt: it is still the same request.
            const leave = f.leave;
            f.leave = () => undefined;
            const { client, session, target, ask, retries } = f;
            this.o.flights.end(f);
            const a: Admitted = {
                client,
                session,
                target,
                ask,
                retries,
                lease: g.lease,
                pool: g.lease.proxy.pool,
                leave,
            };
            const next = this.o.flights.launch(a, { ...f, ttlSeconds: this.o.ttlSeconds }, f);
            then(true);
            run(next);
        };
        const answered = (g: FleetAcquire) => {
            // The store answered, so it ended the failed lease, granted or not.
            f.handedOver = true;
            const room = this.o.room;
            if (blocked || !room?.enabled || !worthWaiting(g) || f.ended || f.socket.destroyed) return take(g);
            const again = () => this.o.fleet.acquire({ ...f.ask, exclude: f.tried }, null);
            const gone = (leave: () => void) => {
                f.socket.once("close", leave);
                return () => void f.socket.off("close", leave);
            };
            room.wait(waitingLine(f.ask), again, g, gone).then(take, (e: Error) =>
                giveBack(`waiting for another member failed: ${e.message}`),
            );
        };
        // A store across the network that fails now: the failure is given back, as when no member is free.
        if (got instanceof Promise) got.then(answered, (e: Error) => giveBack(`the next lease failed: ${e.message}`));
        else answered(got);
    }
}
