import * as os from "node:os";
import type Redis from "ioredis";
import { clusterConnection } from "./connection";
import {
    CLUSTER_KEYS,
    COMMAND_HOLDER_PREFIX,
    LEADER_TTL_MS,
    type ClusterRecords,
    type LeaderInfo,
    readCluster,
} from "./records";
import { CLAIM, RESIGN } from "./scripts";
import { StoreUnavailableError } from "../redis/unavailable";
import { redactStoreUrl } from "../redis/url";

type Scripted = Redis & Record<"egressClaim" | "egressResign", (...a: (string | number)[]) => Promise<unknown>>;

/** What a holder of the lock hears while it holds it: lost to another, or taken again after it ran out. */
export type LockTrouble =
    | { kind: "lost"; holder: LeaderInfo }
    | { kind: "retaken"; before: number; after: number }
    | { kind: "unrenewed"; sinceMs: number; error: string };

/**
 * The stack's leader lock (cluster.ts) as an egress command on any machine takes it: `egress up`,
 * `refresh`, `destroy` or `scale` holds it for the whole command, so no replica leads, and so none drives
 * the engine, until it ends. The same key, the same CLAIM and RESIGN scripts and the same fencing
 * counter as the replicas: a replica that led before holds a stale token once a command took the lock.
 * The holder id is `cli:<host>:<pid>`; the lock also says which command it is, for messages and
 * GET /v1/cluster.
 */
export class CommandLock {
    readonly id = `${COMMAND_HOLDER_PREFIX}${os.hostname()}:${process.pid}`;
    private readonly redis: Scripted;
    private readonly ttlMs: number;
    private timer?: NodeJS.Timeout;
    private token = 0;
    private renewedAt = 0;
    private warnedUnrenewed = false;
    /** Set once the lock was found in another's hands while this command held it. */
    lostTo?: LeaderInfo;

    private constructor(
        private readonly url: string,
        private readonly prefix: string,
        o: { ttlMs?: number },
    ) {
        this.ttlMs = o.ttlMs ?? LEADER_TTL_MS;
        this.redis = clusterConnection(url, Math.min(1500, this.ttlMs / 3)) as Scripted;
        this.redis.defineCommand("egressClaim", { numberOfKeys: 2, lua: CLAIM });
        this.redis.defineCommand("egressResign", { numberOfKeys: 1, lua: RESIGN });
    }

    /**
     * Connects, or fails within `timeoutMs` with a StoreUnavailableError that says why (refused, timed out,
     * wrong password) and shows the URL with its password masked: a store that was named is never skipped.
     */
    static async open(url: string, prefix: string, o: { ttlMs?: number; timeoutMs?: number } = {}) {
        const lock = new CommandLock(url, prefix, o);
        const r = lock.redis;
        let cause: Error | undefined; // the socket's own error (ECONNREFUSED, …): clearer than "Connection is closed."
        r.on("error", (e: Error) => (cause ??= e));
        const timeoutMs = o.timeoutMs ?? 2000;
        let timer: NodeJS.Timeout | undefined;
        const t0 = Date.now();
        try {
            await Promise.race([
                r.connect().then(() => r.ping()),
                new Promise<never>((_r, reject) => {
                    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
                }),
            ]);
        } catch (e) {
            r.disconnect();
            const why = (cause ?? (e as Error)).message.split(url).join(redactStoreUrl(url));
            throw new StoreUnavailableError(
                `the store ${redactStoreUrl(url)} cannot be reached (tried for ${Date.now() - t0} ms): ${why}`,
                2,
            );
        } finally {
            clearTimeout(timer);
        }
        return lock;
    }

    /** The live replicas and the lock's holder, as GET /v1/cluster reads them. */
    cluster(): Promise<ClusterRecords> {
        return readCluster(this.redis, this.prefix, this.ttlMs + 1000);
    }

    /**
     * Takes the lock if it is free (or already this command's) and returns its holder: this command's
     * own record when it got it, else whoever holds it. Holding, it renews every third of the TTL and
     * tells `onTrouble` when a renewal finds it in another's hands or cannot reach the store.
     */
    async claim(command: string, onTrouble: (t: LockTrouble) => void): Promise<LeaderInfo> {
        const holder = await this.claimOnce(command);
        if (holder.id === this.id && !this.timer) {
            this.token = holder.token;
            this.renewedAt = Date.now();
            this.timer = setInterval(() => void this.renew(command, onTrouble), this.ttlMs / 3);
            this.timer.unref();
        }
        return holder;
    }

    /** Stops renewing and gives the lock up if it is still this command's; then disconnects. */
    async release(): Promise<void> {
        clearInterval(this.timer);
        this.timer = undefined;
        try {
            await this.redis.egressResign(this.key(CLUSTER_KEYS.leader), this.id);
        } catch {
            /* the store is away: the lock runs out by its TTL */
        }
        this.redis.disconnect();
    }

    /** Disconnects without touching the lock (a command that only read or queued). */
    close(): void {
        this.redis.disconnect();
    }

    /** The store's URL: a secret, for the parts that open their own connection (cluster/scale-queue.ts). */
    get storeUrl(): string {
        return this.url;
    }

    private key(k: string): string {
        return this.prefix + k;
    }

    private async claimOnce(command: string): Promise<LeaderInfo> {
        const extra = JSON.stringify({ command, host: os.hostname(), pid: process.pid });
        const raw = await this.redis.egressClaim(
            this.key(CLUSTER_KEYS.leader),
            this.key(CLUSTER_KEYS.fence),
            this.id,
            this.ttlMs,
            new Date().toISOString(),
            extra,
        );
        return JSON.parse(String(raw)) as LeaderInfo;
    }

    private async renew(command: string, onTrouble: (t: LockTrouble) => void): Promise<void> {
        if (this.lostTo) return;
        let holder: LeaderInfo;
        try {
            holder = await this.claimOnce(command);
        } catch (e) {
            const sinceMs = Date.now() - this.renewedAt;
            // Past the TTL the lock may have run out and a replica may lead: said once, tried on.
            if (sinceMs >= this.ttlMs && !this.warnedUnrenewed) {
                this.warnedUnrenewed = true;
                onTrouble({ kind: "unrenewed", sinceMs, error: (e as Error).message });
            }
            return;
        }
        this.warnedUnrenewed = false;
        if (holder.id !== this.id) {
            this.lostTo = holder;
            clearInterval(this.timer);
            return onTrouble({ kind: "lost", holder });
        }
        this.renewedAt = Date.now();
        // It ran out (the store was away longer than the TTL) and CLAIM took it afresh: held again, but a
        // replica may have led in between.
        if (holder.token !== this.token) {
            onTrouble({ kind: "retaken", before: this.token, after: holder.token });
            this.token = holder.token;
        }
    }
}
