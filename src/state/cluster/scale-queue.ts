import { randomBytes } from "node:crypto";
import type Redis from "ioredis";
import { connectOnce, partConnection } from "./connection";
import type { Logger } from "pino";
import { Loop } from "../redis/loop";
import { StoreUnavailableError } from "../redis/unavailable";
import { CLUSTER_KEYS } from "./records";
import { READ_SCALE_REQUESTS, REMOVE_SCALE_REQUESTS } from "./scripts";

/** One scale request a follower queued: the id it answered with (202) is the operation's id on the leader. */
export interface QueuedScale {
    id: string;
    pool: string;
    replicas: number;
    /** When the follower queued it (its clock, ISO). */
    at: string;
    /** The replica that took the request. */
    via: string;
}

export interface ScaleQueueOptions {
    /** The replica's shared connection (connection.ts partConnection); unset, this part opens its own. */
    redis?: Redis;
    /** The store's redis:// URL (a secret). */
    url: string;
    /** Key prefix of the stack: `egress:<stack>:`. */
    prefix: string;
    /** This replica's id (cluster.ts `Cluster.id`): only the lock's holder takes requests. */
    self: string;
    log: Logger;
    /** Time from the end of one take of the queue to the start of the next, while leading. @default 250 */
    intervalMs?: number;
}

/** What the leader does with a queued request (start/leading.ts: its Scaler, under the request's id). */
export interface ScaleTaker {
    /** Whether the journal already knows this id: a leader recorded it, then died before removing it. */
    known(id: string): boolean;
    /** Records the request in the journal; throws when not accepted now (stopping). */
    apply(q: QueuedScale): void;
    /**
     * Resolves once the journal keeps what apply() recorded (the store's journal writes in the background:
     * operations/store-journal.ts); rejects when it could not. Absent: kept when apply() returns.
     */
    recorded?(): Promise<void>;
}

/** A request as read from the list: `raw` is the exact entry, what the removal matches. */
export interface ReadScale {
    request: QueuedScale;
    raw: string;
}

type Scripted = Redis & {
    egressReadScales(lock: string, queue: string, self: string): Promise<string[]>;
    egressRemoveScales(lock: string, queue: string, self: string, ...raw: string[]): Promise<number>;
};

/**
 * Scale requests that reach a follower go through the store, not through the leader's HTTP port: the
 * follower validates the request, queues it here and answers 202 with the operation's id at once, even
 * while no replica leads (an election takes up to the lock's TTL) or while the leader that died still
 * holds the lock. The leader takes the queue every `intervalMs` and applies each request, in the order
 * queued, through its Scaler under that id, so GET /v1/operations/<id> and its event stream work on any
 * replica. Requests for one pool fold as they do on the leader: the latest wins.
 *
 * A request leaves the list only after the leader recorded it in its journal (and the journal kept it: ScaleTaker.recorded):
 * read while holding the lock, apply, then remove exactly the applied entries, again only while holding
 * it (scripts.ts READ_SCALE_REQUESTS, REMOVE_SCALE_REQUESTS). A leader killed between the two leaves
 * the request queued, and the next leader, which took the journal over, finds its id known: it removes it
 * without applying it twice. One that cannot apply (it stops) leaves it and those behind it in place.
 */
export class ScaleQueue {
    private readonly redis: Scripted;
    /** Whether this part opened its connection (and closes it), or shares the replica's. */
    /** Disconnects the connection if this part opened its own (partConnection). */
    private readonly disconnectOwn: () => void;
    /** Takes the queue while leading; its taker is the one lead() was given. */
    private readonly loop: Loop;
    private taker?: ScaleTaker;

    constructor(private readonly o: ScaleQueueOptions) {
        const c = partConnection(o); // a failed enqueue answers 503
        this.redis = c.redis as Scripted;
        this.disconnectOwn = c.disconnectOwn;
        this.redis.defineCommand("egressReadScales", { numberOfKeys: 2, lua: READ_SCALE_REQUESTS });
        this.redis.defineCommand("egressRemoveScales", { numberOfKeys: 2, lua: REMOVE_SCALE_REQUESTS });
        // The first round at once on leading: requests queued during the election are waiting.
        this.loop = new Loop({
            name: "scale queue",
            everyMs: o.intervalMs ?? 250,
            firstAfterMs: 0,
            round: () => this.take(this.taker!),
            log: o.log,
        });
    }

    private get key(): string {
        return this.o.prefix + CLUSTER_KEYS.scaleRequests;
    }

    async start(): Promise<void> {
        await connectOnce(this.redis);
    }

    /** Queues a validated request for the leader; a store it cannot reach is a StoreUnavailableError (503). */
    async enqueue(pool: string, replicas: number): Promise<QueuedScale> {
        const q: QueuedScale = {
            id: `op_${randomBytes(8).toString("hex")}`,
            pool,
            replicas,
            at: new Date().toISOString(),
            via: this.o.self,
        };
        try {
            await this.redis.rpush(this.key, JSON.stringify(q));
        } catch (e) {
            throw new StoreUnavailableError(
                `the scale request could not be queued for the leader: ${(e as Error).message}`,
                2,
            );
        }
        return q;
    }

    /** A request still waiting for the leader (GET /v1/operations/<id> in the moment before it is taken). */
    async peek(id: string): Promise<QueuedScale | undefined> {
        // The queue is a list, short-lived and short: the leader empties it every `intervalMs`. A request
        // applied a moment ago may still be listed: the route answers with the journal's operation then
        // (routes/operations.ts `takenSoon`).
        const all = await this.redis.lrange(this.key, 0, -1).catch(() => [] as string[]);
        return all.map((r) => JSON.parse(r) as QueuedScale).find((x) => x.id === id);
    }

    /** Takes up the queue while leading: `taker` gets each request, oldest first. */
    lead(taker: ScaleTaker): void {
        if (this.loop.started) return;
        this.taker = taker;
        this.loop.start();
    }

    /** Stops taking requests (a step-down): what is queued waits for the next leader. */
    async follow(): Promise<void> {
        await this.loop.stop();
    }

    async close(): Promise<void> {
        await this.follow();
        this.disconnectOwn();
    }

    /** One round: read, apply each request not yet known, oldest first, then remove what is recorded. */
    async take(taker: ScaleTaker): Promise<void> {
        const recorded: string[] = [];
        for (const { request: q, raw } of await this.read()) {
            if (taker.known(q.id)) {
                this.o.log.info({ operation: q.id, pool: q.pool }, "a queued scale request was already applied");
            } else {
                try {
                    taker.apply(q);
                } catch (e) {
                    this.o.log.warn(
                        { err: e, operation: q.id, pool: q.pool },
                        "a queued scale request stays queued for the next leader",
                    );
                    // The ones behind it wait too: applied before it, a later one for its pool would lose.
                    break;
                }
            }
            recorded.push(raw);
        }
        if (!recorded.length) return;
        try {
            await taker.recorded?.();
        } catch (e) {
            // Left queued: the next round (or the next leader, if this one is gone) finds the ids it did
            // record known and removes them then; one it did not record is applied by whoever leads.
            this.o.log.warn({ err: e }, "queued scale requests stay queued until the journal keeps them");
            return;
        }
        await this.remove(recorded);
    }

    /** The queued requests, oldest first, if this replica holds the lock (else none); none while the store is away. */
    async read(): Promise<ReadScale[]> {
        const raw = await this.redis
            .egressReadScales(this.o.prefix + CLUSTER_KEYS.leader, this.key, this.o.self)
            .catch(() => [] as string[]); // the requests stay queued, and the next tick tries again
        return raw.map((r) => ({ request: JSON.parse(r) as QueuedScale, raw: r }));
    }

    /** Removes these entries (as read) if this replica still holds the lock; returns how many went. */
    async remove(raw: string[]): Promise<number> {
        if (!raw.length) return 0;
        // Failing, they stay queued: the next round finds their ids known and removes them then.
        return this.redis
            .egressRemoveScales(this.o.prefix + CLUSTER_KEYS.leader, this.key, this.o.self, ...raw)
            .catch(() => 0);
    }
}
