import { randomUUID } from "node:crypto";
import type Redis from "ioredis";
import { ReplyError } from "ioredis";
import { openRedis } from "../../state/redis/open-redis";
import type { LeaseMemberInput, PoolLeaseSettings } from "../leases";
import {
    LEASE_DEFAULTS,
    memberLabels,
    type AcquireRequest,
    type AcquireResult,
    type Lease,
    type ReleaseOutcome,
    type ReleaseResult,
    type Removal,
} from "../leases/types";
import { ACQUIRE, BLOCK, PUBLISH, RELEASE, REVOKE, VIEW, withSettings } from "./scripts";
import type { LeaseStore } from "./types";
import { StoreUnavailableError } from "../../state/redis/unavailable";
import { redactStoreUrl } from "../../state/redis/url";
import { LiveLeases } from "./live-leases";
import { TurnWrites } from "./turn-writes";
import { type RedisStoreOptions, type Reply, TRANSIENT_REPLY } from "./redis-options";
import { isNoScript, StoreScript } from "./script-call";
import { acquireArgs, acquireReply, labelLines, publishedPools, releaseReply, type PublishedPool } from "./redis-wire";
import { GrantReplicas } from "./grant-replicas";

export type { RedisStoreOptions } from "./redis-options";

/**
 * The lease store in Redis (see types.ts for the seam, scripts.ts for the atomic steps). This process
 * keeps only what it publishes (the members it knows and their eligibility, re-published whole on every
 * change and on every reconnect) and a view of live leases re-read every second for the sync reads.
 * A bad day: no offline queue and a command timeout, so a request never waits for Redis longer than
 * `commandTimeoutMs`; ioredis reconnects with back-off (capped at 2 s) by itself.
 */
export class RedisLeaseStore implements LeaseStore {
    private readonly redis: Redis;
    /** The scripts with this store's settings written in (scripts.ts). */
    private readonly scripts: Record<"acquire" | "release" | "revoke" | "block" | "publish" | "view", StoreScript>;
    /** Only a ready connection's: ioredis refuses commands before that, and its handshake is not held. */
    private readonly writes = new TurnWrites(() => (this.redis.status === "ready" ? this.redis.stream : undefined));
    private readonly retryAfterSeconds: number;
    /** Undefined until the first setMembers: publishing nothing would take every member (and its lease) away. */
    private members?: LeaseMemberInput[];
    private pools: Record<string, PublishedPool> = {};
    private readonly eligible = new Map<string, boolean>();
    /** The live leases as last read (every `viewIntervalMs`), for the synchronous reads. */
    private readonly view = new LiveLeases();
    private publishQueued = false;
    private publishing?: Promise<void>;
    private dirty = true;
    private lastError?: string;
    private readonly viewTimer: NodeJS.Timeout;
    private closed = false;
    /** Whether this replica publishes the members (the leader does; followers only lease from what it published). */
    private publisher = true;
    /** How many Redis replicas must have a grant before it is answered (grant-replicas.ts). */
    private readonly grants: GrantReplicas;
    /** Scripts sent again as EVAL after a NOSCRIPT (a restarted Redis), counted. */
    private scriptLoads = 0;

    constructor(private readonly o: RedisStoreOptions) {
        const d = {
            ...LEASE_DEFAULTS,
            ...Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)),
        } as typeof LEASE_DEFAULTS;
        const settings = {
            targetCooldownMs: d.targetCooldownSeconds * 1000,
            blockedBaseMs: d.blockedBaseSeconds * 1000,
            blockedMaxMs: d.blockedMaxSeconds * 1000,
            tombstoneMs: d.tombstoneSeconds * 1000,
            busyRetryMs: d.busyRetryAfterSeconds * 1000,
            idleRetrySeconds: d.idleRetryAfterSeconds,
            defaultTtlSeconds: d.defaultTtlSeconds,
            maxTtlSeconds: d.maxTtlSeconds,
            testClock: o.testClock,
        };
        this.retryAfterSeconds = o.retryAfterSeconds ?? 2;
        const timeout = o.commandTimeoutMs ?? 1500;
        this.grants = new GrantReplicas(o.grantReplicas ?? 0, Math.min(o.grantWaitMs ?? 250, timeout / 2));
        this.redis = openRedis(o.url, {
            lazyConnect: true,
            connectionName: "egress-leases", // CLIENT SETNAME: an operator's CLIENT LIST tells egress' connections apart
            enableOfflineQueue: false, // a request while Redis is away fails at once instead of queueing forever
            commandTimeout: timeout,
            connectTimeout: timeout,
            maxRetriesPerRequest: 0,
            // Off: it sends a turn's batch only once the previous batch is answered. `writes` (turn-writes.ts)
            // keeps its one write per turn without that wait (docs/bench.md).
            enableAutoPipelining: false,
            // Back-off: 100 ms doubling to 2 s, for ever; reconnecting is the only way back.
            retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times - 1, 5), 2000),
        });
        const script = (lua: string) => new StoreScript(withSettings(lua, settings));
        this.scripts = {
            acquire: script(ACQUIRE),
            release: script(RELEASE),
            revoke: script(REVOKE),
            block: script(BLOCK),
            publish: script(PUBLISH),
            view: script(VIEW),
        };
        const where = redactStoreUrl(o.url);
        // An `error` listener is required: without one ioredis writes to the console, which is not a JSON log line.
        this.redis.on("error", (e: Error) => {
            if (e.message === this.lastError) return; // once per distinct failure, not once per reconnect attempt
            this.lastError = e.message;
            o.log.warn(
                { store: where, error: e.message },
                "the lease store (Redis) is unreachable: leases answer 503 store_unavailable until it is back",
            );
        });
        this.redis.on("ready", () => {
            if (this.lastError !== undefined) o.log.info({ store: where }, "the lease store (Redis) is back");
            this.lastError = undefined;
            this.dirty = true;
            this.schedulePublish();
            void this.syncView();
        });
        this.viewTimer = setInterval(() => void this.syncView(), o.viewIntervalMs ?? 1000).unref();
    }

    /** Connects; resolves once connected or after `waitMs` (the service starts not ready and keeps trying). */
    async connect(waitMs = 2000): Promise<boolean> {
        const ready = new Promise<boolean>((r) => {
            this.redis.once("ready", () => r(true));
            setTimeout(() => r(false), waitMs).unref();
        });
        this.redis.connect().catch(() => undefined); // reported by the error listener; retried by retryStrategy
        return ready;
    }

    /** For /readyz: false while Redis is unreachable. */
    ready(): { ok: true } | { ok: false; reason: string } {
        if (this.redis.status === "ready") return { ok: true };
        return {
            ok: false,
            reason: `the lease store (Redis at ${redactStoreUrl(this.o.url)}) is unreachable${this.lastError ? `: ${this.lastError}` : ""}`,
        };
    }

    setMembers(members: readonly LeaseMemberInput[], pools: Record<string, PoolLeaseSettings>): void {
        const sessionTtl = this.o.sessionTtlSeconds ?? LEASE_DEFAULTS.sessionTtlSeconds;
        this.pools = publishedPools(pools, sessionTtl);
        this.members = members.map((m) => ({ id: m.id, pool: m.pool, labels: memberLabels(m) }));
        for (const m of members) if (m.eligible !== undefined) this.eligible.set(m.id, m.eligible);
        const ids = new Set(members.map((m) => m.id));
        for (const id of this.eligible.keys()) if (!ids.has(id)) this.eligible.delete(id);
        this.schedulePublish();
    }

    setEligible(id: string, eligible: boolean): boolean {
        if (this.eligible.get(id) === eligible) return true;
        this.eligible.set(id, eligible);
        this.schedulePublish();
        return this.members?.some((m) => m.id === id) ?? false;
    }

    async acquire(req: AcquireRequest = {}): Promise<AcquireResult> {
        const args = acquireArgs(req, randomUUID());
        // The replaced lease is a gateway attempt of this replica's, so this replica's view knows it.
        const replaced = req.replaces && this.view.get(req.replaces.leaseId);
        const { reply, confirmed } = await this.grants.grant(
            this.redis,
            () => this.run(this.scripts.acquire, args),
            () => this.scriptLoads,
        );
        const result: AcquireResult = acquireReply(reply as Reply, req);
        if (result.ok && confirmed && !(await confirmed())) await this.withdraw(result.lease.id);
        if (result.ok) this.view.remember(result.lease);
        if (!replaced) return result;
        this.view.forget(replaced.id);
        if (req.replaces!.outcome === "error") this.o.onError?.(replaced.proxyId, replaced);
        return { ...result, replaced };
    }

    /** Ends a grant no replica confirmed, then answers 503: the crawler never got it. */
    private async withdraw(leaseId: string): Promise<never> {
        await this.run(this.scripts.release, [leaseId, "ok"]).catch(() => undefined); // else it ends at its TTL
        this.view.forget(leaseId);
        throw new StoreUnavailableError(
            `the lease store is unavailable: ${this.grants.reason()}; retry in ${this.retryAfterSeconds}s`,
            this.retryAfterSeconds,
        );
    }

    async release(leaseId: string, outcome: ReleaseOutcome): Promise<ReleaseResult> {
        const r = (await this.run(this.scripts.release, [leaseId, outcome])) as Reply;
        this.view.forget(leaseId);
        const result = releaseReply(r, leaseId);
        if (result.ok && outcome === "error") this.o.onError?.(result.lease.proxyId, result.lease);
        return result;
    }

    /** Ends the member's lease in Redis (in the background: the drainer's caller is synchronous); returns the lease this view knew. */
    revoke(id: string, removal: Removal): Lease | undefined {
        const lease = this.view.ofMember(id);
        this.run(this.scripts.revoke, [id, JSON.stringify(removal)]).then(
            () => this.view.forgetMember(id),
            (e: unknown) =>
                this.o.log.warn(
                    { member: id, error: (e as Error).message },
                    "ending a removed member's lease in the store failed; it ends at its TTL",
                ),
        );
        return lease;
    }

    async reportBlocked(proxyId: string, target: string): Promise<number | undefined> {
        const until = Number(await this.run(this.scripts.block, [proxyId, target]));
        return until < 0 ? undefined : until;
    }

    isLeased(id: string): boolean {
        return this.view.ofMember(id) !== undefined;
    }

    active(): Lease[] {
        return this.view.all();
    }

    /** Not known without a round trip; the acquire answer says whether the session was kept, moved or new. */
    sessionMember(): string | undefined {
        return undefined;
    }

    sweep(): void {
        if (this.dirty) this.schedulePublish();
    }

    async close(): Promise<void> {
        this.closed = true;
        clearInterval(this.viewTimer);
        await this.publishing;
        await Promise.race([this.redis.quit().catch(() => undefined), new Promise((r) => setTimeout(r, 1000).unref())]);
        this.redis.disconnect();
    }

    /** Runs a script; a lost connection, a timeout or a transient reply becomes StoreUnavailableError. */
    private async run(script: StoreScript, args: string[]): Promise<unknown> {
        this.writes.hold();
        try {
            try {
                return await script.send(this.redis, this.o.prefix, args);
            } catch (e) {
                if (!isNoScript(e)) throw e;
                this.scriptLoads++;
                return await script.load(this.redis, this.o.prefix, args); // Redis lost its scripts (a restart)
            }
        } catch (e) {
            if (e instanceof ReplyError && !TRANSIENT_REPLY.test((e as Error).message)) throw e; // a script bug is a 500, not an outage
            throw new StoreUnavailableError(
                `the lease store is unavailable (${(e as Error).message}); retry in ${this.retryAfterSeconds}s`,
                this.retryAfterSeconds,
            );
        }
    }

    /**
     * Makes this replica the one that publishes the members and their verdicts, or not. With several
     * replicas only the leader publishes (cluster/): two publishers with different views would take each
     * other's members away.
     */
    setPublisher(on: boolean): void {
        this.publisher = on;
        if (on) this.schedulePublish();
    }

    /** Resolves once what setMembers and setEligible changed is in Redis (or failed to get there, and waits for a reconnect). */
    async published(): Promise<void> {
        while (this.publishQueued || this.publishing) {
            if (this.publishing) await this.publishing;
            else await new Promise<void>((r) => queueMicrotask(r));
        }
    }

    private schedulePublish(): void {
        if (!this.publisher || this.publishQueued || this.closed || !this.members) return;
        this.publishQueued = true;
        // Coalesced: a sync followed by a burst of health verdicts is one publication.
        queueMicrotask(() => {
            this.publishQueued = false;
            void this.publish();
        });
    }

    private async publish(): Promise<void> {
        if (this.publishing) {
            this.dirty = true;
            return;
        }
        this.dirty = false;
        const view = JSON.stringify({
            pools: this.pools,
            members: (this.members ?? []).map((m) => [
                m.id,
                m.pool,
                this.eligible.get(m.id) ? 1 : 0,
                labelLines(Object.entries(m.labels ?? {})),
            ]),
        });
        this.publishing = this.run(this.scripts.publish, [view])
            .then(
                () => undefined,
                () => void (this.dirty = true), // published again on reconnect ("ready") and by the sweep
            )
            .finally(() => {
                this.publishing = undefined;
                if (this.dirty && this.redis.status === "ready") this.schedulePublish();
            });
    }

    /**
     * Re-reads the live leases (what other replicas granted or released) for isLeased and active: every
     * `viewIntervalMs`, and now for whoever cannot act on a view a second old (a drain deciding what is leased).
     */
    async syncView(): Promise<void> {
        if (this.redis.status !== "ready") return;
        try {
            this.view.replace((await this.run(this.scripts.view, [])) as string[][]);
        } catch {
            /* the error listener reports the outage; the view keeps its last state */
        }
    }
}
