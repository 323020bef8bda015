import { randomBytes } from "node:crypto";
import type Redis from "ioredis";
import { clusterConnection } from "./connection";
import type { Logger } from "pino";
import { StoreUnavailableError } from "../store/types";
import { CLUSTER_KEYS } from "./cluster";
import { TAKE_SCALE_REQUESTS } from "./scripts";

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
    /** The store's redis:// URL (a secret). */
    url: string;
    /** Key prefix of the stack: `egress:<stack>:`. */
    prefix: string;
    /** This replica's id (cluster.ts `Cluster.id`): only the lock's holder takes requests. */
    self: string;
    log: Logger;
    /** How often the leader takes queued requests. @default 250 */
    intervalMs?: number;
}

type Scripted = Redis & { egressTakeScales(lock: string, queue: string, self: string): Promise<string[]> };

/**
 * Scale requests that reach a follower go through the store, not through the leader's HTTP port: the
 * follower validates the request, queues it here and answers 202 with the operation's id at once, even
 * while no replica leads (an election takes up to the lock's TTL) or while the leader that died still
 * holds the lock. The leader takes the queue every `intervalMs` (atomically, and only while it holds the
 * lock: scripts.ts TAKE_SCALE_REQUESTS) and applies each request, in the order queued, through its
 * Scaler under that id, so
 * GET /v1/operations/<id> and its event stream work on any replica. Requests for one pool fold as they
 * do on the leader: the latest wins.
 */
export class ScaleQueue {
    private readonly redis: Scripted;
    private timer?: NodeJS.Timeout;
    private taking?: Promise<void>;

    constructor(private readonly o: ScaleQueueOptions) {
        this.redis = clusterConnection(o.url) as Scripted; // a failed enqueue answers 503
        this.redis.defineCommand("egressTakeScales", { numberOfKeys: 2, lua: TAKE_SCALE_REQUESTS });
    }

    private get key(): string {
        return this.o.prefix + CLUSTER_KEYS.scaleRequests;
    }

    async start(): Promise<void> {
        await this.redis.connect().catch(() => undefined);
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
        // The queue is a list, short-lived and short: the leader empties it every `intervalMs`.
        const all = await this.redis.lrange(this.key, 0, -1).catch(() => [] as string[]);
        return all.map((r) => JSON.parse(r) as QueuedScale).find((x) => x.id === id);
    }

    /** Takes up the queue while leading: `apply` gets each request, oldest first. */
    lead(apply: (q: QueuedScale) => void): void {
        if (this.timer) return;
        const tick = () => {
            this.taking ??= this.take(apply).finally(() => (this.taking = undefined));
        };
        tick();
        this.timer = setInterval(tick, this.o.intervalMs ?? 250);
        this.timer.unref();
    }

    /** Stops taking requests (a step-down): what is queued waits for the next leader. */
    async follow(): Promise<void> {
        clearInterval(this.timer);
        this.timer = undefined;
        await this.taking;
    }

    async close(): Promise<void> {
        await this.follow();
        this.redis.disconnect();
    }

    private async take(apply: (q: QueuedScale) => void): Promise<void> {
        let raw: string[];
        try {
            raw = await this.redis.egressTakeScales(this.o.prefix + CLUSTER_KEYS.leader, this.key, this.o.self);
        } catch {
            return; // the store is away: the requests stay queued, and the next tick tries again
        }
        const back: string[] = [];
        for (const r of raw) {
            const q = JSON.parse(r) as QueuedScale;
            try {
                apply(q);
            } catch (e) {
                this.o.log.warn(
                    { err: e, operation: q.id, pool: q.pool },
                    "a queued scale request goes back to the queue",
                );
                back.push(r);
            }
        }
        // Not accepted here (this replica is stopping): back at the head, in their order, for the next
        // leader; requests queued meanwhile are newer and stay behind them (the latest wins per pool).
        if (back.length) await this.redis.lpush(this.key, ...back.reverse()).catch(() => undefined);
    }
}
