import * as os from "node:os";
import { randomBytes } from "node:crypto";
import type Redis from "ioredis";
import { connectOnce, partConnection } from "../../state/cluster/connection";
import type { Logger } from "pino";
import { StackHome } from "./home";
import type { ReplicaScope } from "../../state/cluster/scope";
import { CLAIM, FENCE, RESIGN } from "../../state/cluster/scripts";
import {
    CLUSTER_KEYS,
    describeCommandHolder,
    heldByCommand,
    LEADER_TTL_MS,
    pruneReplicas,
    readCluster,
    scopeOf,
    type ClusterRecords,
    type LeaderInfo,
    type ReplicaInfo,
} from "../../state/cluster/records";

export interface ClusterOptions {
    /** The replica's shared connection (connection.ts partConnection); unset, this part opens its own. */
    redis?: Redis;
    /** The store's redis:// URL (a secret). */
    url: string;
    /** Key prefix of the stack: `egress:<stack>:`. */
    prefix: string;
    self: Omit<ReplicaInfo, "id" | "lastHeartbeat" | "pid" | "host" | "startedAt" | "scope">;
    log: Logger;
    /**
     * What replicas must share to join (scope.ts), read at start and at every heartbeat (an operator may
     * edit the stack file). Without it, the replica's scope is its `self.home`.
     */
    scope?: () => ReplicaScope;
    /** Lifetime of the leader lock; renewed every tenth of it, claimed by the others every third. @default 5000 */
    ttlMs?: number;
    /** Called when this replica starts or stops leading (never twice in a row with the same value); see `subscribe`. */
    onLeading?: (leading: boolean) => void;
}

/** How soon a fence the store did not answer is asked again (a refused command fails at once). */
const FENCE_RETRY_MS = 100;

type Scripted = Redis &
    Record<"egressClaim" | "egressFence" | "egressResign", (...a: (string | number)[]) => Promise<unknown>>;

/**
 * Several `egress serve` replicas of one stack, on one Redis. Each writes a heartbeat record; one of them
 * holds the leader lock, a Redis key with a TTL of a few seconds that its holder renews every tenth of
 * it, and at once when the connection comes back after an outage (issue 35): a Redis restart or a
 * failover shorter than what is left of the TTL keeps the leader and its running operation. Taking the lock over increments a fencing token: the engine's operations check it (`fence`)
 * before they start, so a leader that was cut off and lost its lock starts nothing more, even before it
 * notices. A leader also stops counting itself leader once its last successful renewal is older than
 * the TTL less a margin, without waiting for Redis: the lock may already be another's.
 */
export class Cluster {
    readonly id = `${os.hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
    private readonly redis: Scripted;
    /** Whether this part opened its connection (and closes it), or shares the replica's. */
    /** Disconnects the connection if this part opened its own (partConnection). */
    private readonly disconnectOwn: () => void;
    private readonly ttlMs: number;
    private readonly startedAt = new Date().toISOString();
    private timer?: NodeJS.Timeout;
    /** A tick is running; `tickAgain`: one more was asked for meanwhile (the connection came back). */
    private ticking = false;
    private tickAgain = false;
    private leading = false;
    private leadingFrom = 0;
    private token = 0;
    /** Local clock time until which this replica may act as leader without hearing from Redis again. */
    private validUntil = 0;
    private leaderSeen?: LeaderInfo;
    private stopped = false;
    private prunedAt = 0;
    /** Another home took the stack while this replica could not renew the home key (`foreignHome`). */
    private foreignSeen?: string;
    private gatewayUrl?: string;
    /** Which home's replicas hold the stack (home.ts). */
    private readonly home: StackHome;

    constructor(private readonly o: ClusterOptions) {
        this.ttlMs = o.ttlMs ?? LEADER_TTL_MS;
        const c = partConnection(o, Math.min(1500, this.ttlMs / 3)); // a failed tick is enough
        this.redis = c.redis as Scripted;
        this.disconnectOwn = c.disconnectOwn;
        this.redis.defineCommand("egressClaim", { numberOfKeys: 2, lua: CLAIM });
        this.redis.defineCommand("egressFence", { numberOfKeys: 1, lua: FENCE });
        this.redis.defineCommand("egressResign", { numberOfKeys: 1, lua: RESIGN });
        const home = o.self.home;
        const scope = o.scope ? () => o.scope!().id : home ? () => home : undefined;
        this.home = new StackHome(this.redis, this.key(CLUSTER_KEYS.home), scope, this.ttlMs * 3, o.log, home);
        // Back from an outage: a leader renews at once, before its lock runs out. The others keep their
        // pace, so a lock that Redis lost in a restart goes back to the replica that held it.
        this.redis.on("ready", () => {
            if (this.leading && !this.stopped) this.tickNow();
        });
    }

    /** Runs a tick now: the one scheduled is replaced, and one already running runs once more after. */
    private tickNow(): void {
        if (this.ticking) {
            this.tickAgain = true;
            return;
        }
        clearTimeout(this.timer);
        void this.tick();
    }

    private key(k: string): string {
        return `${this.o.prefix}${k}`;
    }

    /** Connects the part that acts on leadership (start/leading.ts), built after the cluster. */
    subscribe(onLeading: (leading: boolean) => void): void {
        this.o.onLeading = onLeading;
    }

    /**
     * Where this replica's gateway answers, once it listens (before `start`): its record then shows it, so
     * an operator or a load balancer's config can find every replica's gateway in GET /v1/cluster.
     */
    advertiseGateway(url: string): void {
        this.gatewayUrl = url;
    }

    /** Connects and starts the heartbeat and the claim loop; the first claim runs at once. */
    async start(): Promise<void> {
        await connectOnce(this.redis);
        await this.tick();
    }

    /**
     * Refuses to join replicas of the stack with another scope (scope.ts): from another EGRESS_HOME
     * (another host, or another directory) when the stack is one host's (a file backend, pools of members
     * that are processes of one host), or with another stack config when it is shared: the next leader applies its own home's stack file, so a
     * leader with another one would apply a different desired state. The stack's
     * home key is taken in one step (scripts.ts HOLD_HOME), so of two replicas from two homes starting in
     * the same moment one is refused; the heartbeat renews it. Call before `start`; a store that does not
     * answer yet is not a refusal (the lease store reports it), and the heartbeat then takes the key.
     */
    async assertOneHome(): Promise<void> {
        if (!this.home.home) return;
        await connectOnce(this.redis);
        const replicas = async () => (await this.view().catch(() => undefined))?.replicas ?? [];
        try {
            await this.home.assertAlone(replicas, () => this.o.scope?.().oneHome);
        } catch (e) {
            this.disconnectOwn();
            throw e;
        }
    }

    /** This replica leads now (its lock was renewed within the TTL). */
    isLeader(): boolean {
        return this.leading && Date.now() < this.validUntil;
    }

    /** The lock's holder, as last read (by the claim loop, every tenth or third of the TTL). */
    leader(): LeaderInfo | undefined {
        return this.leaderSeen;
    }

    /** Local clock time since which this replica leads, or undefined while it does not. */
    leadingSince(): number | undefined {
        return this.isLeader() ? this.leadingFrom : undefined;
    }

    /** Why this replica must not start an engine operation although it may lead (home.ts `driftReason`). */
    configDrift(): string | undefined {
        return this.home.driftReason();
    }

    /**
     * Checks with Redis that this replica still holds the lock with its token: call before an engine
     * operation. A store that does not answer is asked again while the lock may still be ours (until the
     * claim loop renews it or steps down): an operation due during a short outage waits for it, rather
     * than being set aside by a replica that goes on leading (nothing would start it then). `signal`: the
     * caller stops waiting (the service stops), and the answer is false.
     */
    async fence(signal?: AbortSignal): Promise<boolean> {
        while (this.isLeader() && !this.stopped && !signal?.aborted) {
            try {
                return (await this.redis.egressFence(this.key(CLUSTER_KEYS.leader), this.id, this.token)) === 1;
            } catch {
                await new Promise((r) => setTimeout(r, FENCE_RETRY_MS));
            }
        }
        return false;
    }

    /** The live replicas and the leader. */
    view(): Promise<ClusterRecords> {
        return readCluster(this.redis, this.o.prefix, this.ttlMs + 1000);
    }

    /** A live replica's record (the leader's, to forward to). */
    async replica(id: string): Promise<ReplicaInfo | undefined> {
        const raw = await this.redis.hget(this.key(CLUSTER_KEYS.replicas), id).catch(() => null);
        return raw ? (JSON.parse(raw) as ReplicaInfo) : undefined;
    }

    /**
     * Gives the lock up (when taking up the leadership failed: recovery could not run). The claim loop
     * goes on, so this or another replica tries again at its next tick, a third of the TTL later.
     */
    async resign(): Promise<void> {
        this.setLeading(false);
        try {
            await this.redis.egressResign(this.key(CLUSTER_KEYS.leader), this.id);
        } catch {
            /* Redis is down: the lock runs out by its TTL */
        }
    }

    /** Stops the loops; a leader gives its lock up at once, so another replica need not wait out the TTL. */
    async stop(): Promise<void> {
        this.stopped = true;
        clearTimeout(this.timer);
        this.setLeading(false);
        try {
            await this.redis.egressResign(this.key(CLUSTER_KEYS.leader), this.id);
            await this.redis.hdel(this.key(CLUSTER_KEYS.replicas), this.id);
            // The last replica of this home frees the stack at once: a move to another home need not wait.
            const { replicas } = await this.view();
            if (!replicas.some((r) => scopeOf(r) === this.home.home)) await this.home.free();
        } catch {
            /* Redis is down: the lock runs out by its TTL */
        }
        this.disconnectOwn();
    }

    private async tick(): Promise<void> {
        if (this.stopped) return;
        this.ticking = true;
        this.tickAgain = false;
        const sent = Date.now();
        try {
            const scope = this.home.home;
            const me: ReplicaInfo = {
                ...this.o.self,
                ...(this.gatewayUrl && { gatewayUrl: this.gatewayUrl }),
                id: this.id,
                pid: process.pid,
                host: os.hostname(),
                startedAt: this.startedAt,
                lastHeartbeat: new Date().toISOString(),
                scope,
            };
            await this.redis.hset(this.key(CLUSTER_KEYS.replicas), this.id, JSON.stringify(me));
            const others = async () =>
                (await this.view()).replicas
                    .filter((r) => r.id !== this.id)
                    .map((r) => ({ scope: scopeOf(r), home: r.home }));
            const home = await this.home.hold(others, scope);
            if (home && home.held !== home.mine && !home.drifted) await this.foreignHome(home.held);
            else await this.claim(sent);
            if (Date.now() - this.prunedAt > 60_000) {
                this.prunedAt = Date.now();
                await pruneReplicas(this.redis, this.o.prefix, 60_000);
            }
        } catch (e) {
            if (this.leading && Date.now() >= this.validUntil) {
                this.o.log.warn({ error: (e as Error).message }, "cannot renew the leader lock: stepping down");
                this.setLeading(false);
            }
        }
        this.ticking = false;
        if (this.stopped) return;
        if (this.tickAgain) return this.tickNow();
        // A leader renews every tenth of the TTL: the last renewal before an outage is then at most that
        // old, and an outage of up to about 4/5 of the TTL is survived wherever it falls (the 0.5 s margin,
        // a reconnect and a tick's own time taken off: 3.9 s of 5). The others look for a free lock every
        // third of it. A leader steps down exactly when the lock may have run out, even if a tick is late.
        const every = this.leading ? this.ttlMs / 10 : this.ttlMs / 3;
        const next = Math.max(50, Math.min(every, this.leading ? this.validUntil - Date.now() : Infinity));
        this.timer = setTimeout(() => void this.tick(), next);
        this.timer.unref();
    }

    /** Renews the lock or takes a free one, and acts on who holds it now (`sent`: when this tick began). */
    private async claim(sent: number): Promise<void> {
        this.foreignSeen = undefined;
        const holder = JSON.parse(
            String(
                await this.redis.egressClaim(
                    this.key(CLUSTER_KEYS.leader),
                    this.key(CLUSTER_KEYS.fence),
                    this.id,
                    this.ttlMs,
                    new Date().toISOString(),
                ),
            ),
        ) as LeaderInfo;
        if (heldByCommand(holder) && holder.id !== this.leaderSeen?.id)
            this.o.log.info(
                { holder },
                `the stack's lock is held by ${describeCommandHolder(holder)}: no replica leads until it ends`,
            );
        this.leaderSeen = holder;
        if (holder.id === this.id) {
            this.token = holder.token;
            // The lock lives ttlMs from when Redis ran the script, which was after `sent`.
            this.validUntil = sent + this.ttlMs - 500;
            this.setLeading(true);
        } else this.setLeading(false);
    }

    /**
     * The home key ran out while this replica could not reach Redis, and replicas from another home took
     * the stack: this one must not lead it (their journal and stack file are the truth now). It steps down,
     * gives the lock up, says so once, and keeps checking, so it may lead again once they are gone.
     */
    private async foreignHome(home: string): Promise<void> {
        if (this.foreignSeen !== home)
            this.o.log.error(
                { home, mine: this.home.home },
                `replicas from another EGRESS_HOME (${home}) took this stack while this replica could not reach the store: it no longer leads; stop it, or stop them`,
            );
        this.foreignSeen = home;
        this.setLeading(false);
        await this.redis.egressResign(this.key(CLUSTER_KEYS.leader), this.id);
    }

    private setLeading(on: boolean): void {
        if (on === this.leading) return;
        this.leading = on;
        if (on) this.leadingFrom = Date.now();
        this.o.log.info({ replica: this.id, fence: this.token }, on ? "leading the stack" : "no longer leading");
        this.o.onLeading?.(on);
    }
}
