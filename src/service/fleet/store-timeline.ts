import type Redis from "ioredis";
import type { Logger } from "pino";
import { connectOnce, partConnection } from "../../state/cluster/connection";
import { CLUSTER_KEYS } from "../../state/cluster/records";
import { APPEND_TIMELINE, READ_TIMELINE } from "../../state/cluster/scripts";
import { Loop } from "../../state/redis/loop";
import type { PoolCounts } from "./fleet";
import { samplePools, timelineCadence, type TimelinePoint, type TimelineRead, type TimelineSource } from "./timeline";

export interface StoreTimelineOptions {
    /** The replica's shared connection (connection.ts partConnection); unset, this part opens its own. */
    redis?: Redis;
    /** The store's redis:// URL (a secret). */
    url: string;
    /** Key prefix of the stack: `egress:<stack>:`. */
    prefix: string;
    /** This replica's id (cluster.ts `Cluster.id`): only the lock's holder appends. */
    self: string;
    /** Whether this replica leads now (cluster.ts `isLeader`): followers sample nothing. */
    leading: () => boolean;
    counts: () => Record<string, PoolCounts>;
    log: Logger;
    /** Time between samples. @default 30000 */
    intervalMs?: number;
    /** How far back samples are kept. @default 3600000 */
    spanMs?: number;
}

type Scripted = Redis &
    Record<"egressAppendTimeline" | "egressReadTimeline", (...a: (string | number)[]) => Promise<unknown>>;

/**
 * The dashboard's timeline with replicas: only the leader samples (the counts every replica shows are
 * its verdicts anyway), appending each sample to the store (`<prefix>timeline`, a sorted set by Redis'
 * time, trimmed to the span: scripts.ts APPEND_TIMELINE, only while it holds the lock), and every
 * replica's GET /v1/timeline reads it there, so they all show the same hour and a restart or a failover
 * continues it rather than starting it empty. Like the verdicts (cluster/verdicts.ts), a replica that
 * cannot read keeps its last copy and says why (`stale`); a sample the leader cannot append is lost (a
 * gap in the chart), never queued.
 */
export class StoreTimeline implements TimelineSource {
    readonly intervalMs: number;
    private readonly spanMs: number;
    private readonly redis: Scripted;
    /** Whether this part opened its connection (and closes it), or shares the replica's. */
    /** Disconnects the connection if this part opened its own (partConnection). */
    private readonly disconnectOwn: () => void;
    private readonly loop: Loop;
    private sampling?: Promise<void>;
    /** The last samples read, shown while the store cannot be read. */
    private last: TimelinePoint[] = [];
    /** What failed last (appending or reading), so an outage is logged once and its end once. */
    private failing?: string;

    constructor(private readonly o: StoreTimelineOptions) {
        ({ intervalMs: this.intervalMs, spanMs: this.spanMs } = timelineCadence(o));
        const c = partConnection(o); // a failed read is `stale`, a failed append a gap
        this.redis = c.redis as Scripted;
        this.disconnectOwn = c.disconnectOwn;
        this.redis.defineCommand("egressAppendTimeline", { numberOfKeys: 2, lua: APPEND_TIMELINE });
        this.redis.defineCommand("egressReadTimeline", { numberOfKeys: 1, lua: READ_TIMELINE });
        // sample() never throws (append logs an outage once, with reads: `failed`), so the loop logs nothing.
        this.loop = new Loop({ name: "timeline", everyMs: this.intervalMs, round: () => this.sample(), log: o.log });
    }

    private get key(): string {
        return this.o.prefix + CLUSTER_KEYS.timeline;
    }

    async start(): Promise<void> {
        await connectOnce(this.redis);
        await this.sample(); // the first sample before start() returns; the loop's first one interval later
        this.loop.start();
    }

    async stop(): Promise<void> {
        await this.loop.stop();
        await this.sampling; // one a test (or start) asked for outside the loop
        this.disconnectOwn();
    }

    /** Appends one sample if this replica leads (exposed for tests); never two at once, never throws. */
    async sample(): Promise<void> {
        if (this.sampling || !this.o.leading()) return;
        this.sampling = this.append().finally(() => (this.sampling = undefined));
        await this.sampling;
    }

    async read(): Promise<TimelineRead> {
        try {
            const raw = (await this.redis.egressReadTimeline(this.key, this.spanMs)) as string[];
            this.last = raw.map(parsePoint);
            this.recovered("reading");
            return { points: this.last };
        } catch (e) {
            const stale = `cannot read the timeline from the store (${(e as Error).message}); showing the last samples read`;
            this.failed("reading", e, stale);
            return { points: this.last, stale };
        }
    }

    private async append(): Promise<void> {
        try {
            const pools = JSON.stringify(samplePools(this.o.counts()));
            const ok = await this.redis.egressAppendTimeline(
                this.o.prefix + CLUSTER_KEYS.leader,
                this.key,
                this.o.self,
                pools,
                this.spanMs,
            );
            if (ok !== 1) this.o.log.debug("not the lock's holder (any more): timeline sample not appended");
            this.recovered("appending");
        } catch (e) {
            this.failed("appending", e, "a timeline sample could not be appended to the store; the chart has a gap");
        }
    }

    private failed(what: string, e: unknown, why: string): void {
        if (this.failing !== what) this.o.log.warn({ error: (e as Error).message }, why);
        this.failing = what;
    }

    private recovered(what: string): void {
        if (this.failing !== what) return;
        this.failing = undefined;
        this.o.log.info(`${what} the timeline in the store again`);
    }
}

/** `<ms> <pools JSON>` as APPEND_TIMELINE writes it. */
function parsePoint(raw: string): TimelinePoint {
    const space = raw.indexOf(" ");
    return {
        at: new Date(Number(raw.slice(0, space))).toISOString(),
        pools: JSON.parse(raw.slice(space + 1)) as TimelinePoint["pools"],
    };
}
