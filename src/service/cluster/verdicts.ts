import type Redis from "ioredis";
import { connectOnce, partConnection } from "../../state/cluster/connection";
import type { Logger } from "pino";
import type { ProxyMember } from "../../model";
import type { HealthMonitor, HealthState, MemberHealthView } from "../../probes";
import { CLUSTER_KEYS } from "../../state/cluster/records";
import { PUBLISH_VERDICTS, READ_VERDICTS } from "../../state/cluster/scripts";
import { LeaderCounters } from "./leader-counters";

/**
 * A member's lifecycle facts besides health that only the leader knows (its drains, failed operations
 * naming the member): published with the verdicts so followers show them too (the fleet's MemberNote).
 */
export interface LifecycleNote {
    /** When the drain ends (ms). */
    drainingUntil?: number;
    opError?: { message: string; at: number };
}

/** A member's verdict as the leader publishes it: for the address it probed ("host:port"), with its notes. */
export type PublishedVerdict = MemberHealthView & { address: string } & LifecycleNote;

/** Whose verdicts a replica shows (GET /v1/proxies `verdicts`). */
export interface VerdictsStatus {
    /** The replica whose probes decided them: this one while it leads, else the leader that last published. */
    decidedBy?: string;
    /** Whether that is this replica. */
    self: boolean;
    /** When the leader last published them (Redis' clock); absent while leading and before the first read. */
    publishedAt?: string;
    /** Why what is shown may be old (the store cannot be read, the leader stopped publishing); the last verdicts read are kept. */
    stale?: string;
}

export interface ClusterVerdictsOptions {
    /** The replica's shared connection (connection.ts partConnection); unset, this part opens its own. */
    redis?: Redis;
    /** The store's redis:// URL (a secret). */
    url: string;
    /** Key prefix of the stack: `egress:<stack>:`. */
    prefix: string;
    /** This replica's id (cluster.ts `Cluster.id`): the lock's holder is the only one that may publish. */
    self: string;
    /** This replica's probes: they run only while it leads. */
    monitor: HealthMonitor;
    log: Logger;
    /** How often the leader publishes and followers re-read: the lease store's view cadence. @default 1000 */
    intervalMs?: number;
    /**
     * Told (while leading) of outcomes released on any replica since the last round: per member, how many,
     * and how many of them blocked (the rotation's outcome window).
     */
    onOutcomes?: (member: string, blocked: number, total: number) => void;
    /** A publication older than this is reported stale (its leader may be gone). @default 5 × intervalMs, at least 5000 */
    staleAfterMs?: number;
}

type Scripted = Redis & Record<"egressVerdicts" | "egressReadVerdicts", (...a: string[]) => Promise<unknown>>;

const addressOf = (m: Pick<ProxyMember, "host" | "port">) => `${m.host}:${m.port}`;

/**
 * The cluster's health verdicts: only the leader probes and decides (its HealthMonitor), and publishes
 * every member's verdict to the store (`<prefix>health`) on every change and every `intervalMs`;
 * followers show what it published, re-read on the same cadence, so every replica lists the same health.
 * A follower that cannot read keeps its last copy and says why (`status().stale`); one that never read
 * shows `unknown`. A replica that takes the lead starts its probes from the last publication, so a
 * failover keeps verdicts instead of starting every member at `unknown`. Lease errors count wherever the
 * lease was released: the leader feeds the store's per-member error counters into its monitor.
 */
export class ClusterVerdicts {
    private readonly redis: Scripted;
    /** Whether this part opened its connection (and closes it), or shares the replica's. */
    /** Disconnects the connection if this part opened its own (partConnection). */
    private readonly disconnectOwn: () => void;
    private readonly intervalMs: number;
    private readonly staleAfterMs: number;
    private members = new Map<string, ProxyMember>();
    private leading = false;
    /** The last publication read (followers). */
    private read?: { by: string; at: number; members: Map<string, PublishedVerdict> };
    private stale?: string;
    private timer?: NodeJS.Timeout;
    private queued = false;
    private ticking?: Promise<void>;
    /** The store's lease-error and outcome counters, read while leading (leader-counters.ts). */
    private readonly counters: LeaderCounters;
    private onChange?: (id: string, state: HealthState) => void;
    /** The leader's lifecycle notes per member, published with the verdicts (the fleet's, connected late). */
    private notes?: () => ReadonlyMap<string, LifecycleNote>;
    private closed = false;

    constructor(private readonly o: ClusterVerdictsOptions) {
        this.intervalMs = o.intervalMs ?? 1000;
        this.staleAfterMs = o.staleAfterMs ?? Math.max(5000, 5 * this.intervalMs);
        const c = partConnection(o); // a failed read sets `stale`
        this.redis = c.redis as Scripted;
        this.disconnectOwn = c.disconnectOwn;
        this.redis.defineCommand("egressVerdicts", { numberOfKeys: 2, lua: PUBLISH_VERDICTS });
        this.redis.defineCommand("egressReadVerdicts", { numberOfKeys: 1, lua: READ_VERDICTS });
        this.counters = new LeaderCounters(this.redis, o);
    }

    private key(k: string): string {
        return this.o.prefix + k;
    }

    /**
     * Connects the fleet (built above the cluster): a follower calls it for every verdict the leader
     * changed, so its lease store's eligibility is the leader's when it takes over and publishes.
     */
    subscribe(onChange: (id: string, state: HealthState) => void): void {
        this.onChange = onChange;
    }

    /** Connects what the fleet knows of its members' lifecycle (drains, failed operations), published while leading. */
    publishNotes(notes: () => ReadonlyMap<string, LifecycleNote>): void {
        this.notes = notes;
    }

    /** A follower's view of the leader's notes on `id` (for the member's current address); none while leading. */
    note(id: string): LifecycleNote | undefined {
        if (this.leading) return undefined;
        const v = this.read?.members.get(id);
        const m = this.members.get(id);
        if (!v || !m || v.address !== addressOf(m)) return undefined;
        return v.drainingUntil === undefined && !v.opError
            ? undefined
            : { drainingUntil: v.drainingUntil, opError: v.opError };
    }

    /** Follows the stack's members (the fleet's sync); the monitor keeps them so it can probe them once leading. */
    setMembers(members: ProxyMember[]): void {
        this.members = new Map(members.map((m) => [m.id, m]));
        this.o.monitor.setMembers(members);
    }

    /** The verdict this replica shows for `id`: its own while leading, else the leader's for the member's current address. */
    get(id: string): MemberHealthView | undefined {
        if (this.leading) return this.o.monitor.get(id);
        const v = this.read?.members.get(id);
        const m = this.members.get(id);
        return v && m && v.address === addressOf(m) ? v : undefined;
    }

    status(): VerdictsStatus {
        if (this.leading) return { decidedBy: this.o.self, self: true };
        return {
            ...(this.read && { decidedBy: this.read.by, publishedAt: new Date(this.read.at).toISOString() }),
            self: false,
            ...(this.stale && { stale: this.stale }),
        };
    }

    /** Connects and starts the cadence (following: reading; leading: publishing). */
    async start(): Promise<void> {
        await connectOnce(this.redis);
        await this.tick();
        this.timer = setInterval(() => void this.tick(), this.intervalMs);
        this.timer.unref();
    }

    /** Takes up deciding: from the freshest publication, then this replica's probes (start/leading.ts). */
    async lead(): Promise<void> {
        if (this.leading) return;
        await this.refresh(true);
        if (this.read) this.o.monitor.seed([...this.read.members.values()]);
        this.counters.reset();
        this.leading = true;
        this.stale = undefined;
        this.o.monitor.start();
        this.changed();
    }

    /** Puts deciding down: no more probes; what is shown is the new leader's from the next read. */
    async follow(): Promise<void> {
        if (!this.leading) return;
        this.leading = false;
        await this.o.monitor.stop();
        await this.refresh(true);
    }

    /** A verdict changed here (the monitor's transition): publish now rather than at the next tick. */
    changed(): void {
        if (!this.leading || this.queued || this.closed) return;
        this.queued = true;
        queueMicrotask(() => {
            this.queued = false;
            void this.tick();
        });
    }

    async close(): Promise<void> {
        this.closed = true;
        clearInterval(this.timer);
        await this.ticking;
        this.disconnectOwn();
    }

    /** One step of the cadence; never two at once (a publish requested meanwhile runs right after). */
    private async tick(): Promise<void> {
        if (this.closed) return;
        if (this.ticking) {
            if (this.leading)
                this.ticking.then(
                    () => this.changed(),
                    () => undefined,
                );
            return;
        }
        this.ticking = (this.leading ? this.publish() : this.refresh()).finally(() => (this.ticking = undefined));
        await this.ticking;
    }

    private async publish(): Promise<void> {
        try {
            await this.counters.countLeaseErrors();
            await this.counters.countOutcomes();
            const notes = this.notes?.();
            const members = this.o.monitor.snapshot().flatMap((v) => {
                const m = this.members.get(v.id);
                return m ? [{ ...v, address: addressOf(m), ...notes?.get(v.id) }] : [];
            });
            const key = (k: string) => this.key(k);
            const ok = await this.redis.egressVerdicts(
                key(CLUSTER_KEYS.leader),
                key(CLUSTER_KEYS.health),
                this.o.self,
                JSON.stringify(members),
            );
            if (ok !== 1) this.o.log.debug("not the lock's holder (any more): verdicts not published");
        } catch (e) {
            this.o.log.debug(
                { error: (e as Error).message },
                "publishing the health verdicts failed; retried next tick",
            );
        }
    }

    /**
     * Re-reads the leader's publication; on failure the last one stays and `stale` says why. Every verdict
     * that changed goes to the fleet; `all` after this replica led or before it leads, since what the
     * fleet acted on then may not be the previous read.
     */
    private async refresh(all = false): Promise<void> {
        let got: string[];
        try {
            got = (await this.redis.egressReadVerdicts(this.key(CLUSTER_KEYS.health))) as string[];
        } catch (e) {
            const why = `cannot read the leader's health verdicts from the store (${(e as Error).message}); showing the last ones read`;
            if (!this.stale?.startsWith("cannot read")) this.o.log.warn({ error: (e as Error).message }, why);
            this.stale = why;
            return;
        }
        if (this.stale?.startsWith("cannot read")) this.o.log.info("reading the leader's health verdicts again");
        const [by, at, json, now] = got;
        if (!by) {
            this.stale = "no leader has published health verdicts yet";
            return;
        }
        const members = new Map((JSON.parse(json) as PublishedVerdict[]).map((v) => [v.id, v]));
        const ids = [...new Set([...members.keys(), ...(this.read?.members.keys() ?? []), ...this.members.keys()])];
        const shown = () => new Map(ids.map((id) => [id, this.get(id)?.state ?? "unknown"]));
        const before = shown();
        this.read = { by, at: Number(at), members };
        const age = Number(now) - Number(at);
        this.stale =
            age > this.staleAfterMs
                ? `the leader last published health verdicts ${Math.round(age / 1000)} s ago`
                : undefined;
        if (this.leading) return;
        // Mirror the leader's verdicts into this replica's eligibility (published only if it takes over).
        for (const [id, is] of shown()) if (all || before.get(id) !== is) this.onChange?.(id, is);
    }
}
