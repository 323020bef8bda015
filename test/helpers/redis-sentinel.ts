/**
 * A throwaway Sentinel-watched Redis for one test, as production runs it but on loopback: a primary,
 * `replicas` replicas (`--replicaof`) and three sentinels (quorum 2) with short timeouts
 * (`down-after-milliseconds` 2500, `failover-timeout` 5000), all with one password, each a
 * test/helpers/redis.ts server. `url` is the `redis+sentinel://` store URL egress is given.
 */
import Redis from "ioredis";
import { redisLog, startRedis, type TestRedis } from "./redis";

export interface TestSentinelRedis {
    password: string;
    /** The master name the sentinels watch. */
    name: string;
    /** The data nodes, the first being the primary at start. */
    nodes: TestRedis[];
    sentinels: TestRedis[];
    /** redis+sentinel://:<password>@127.0.0.1:<s1>,127.0.0.1:<s2>,127.0.0.1:<s3>/<name> */
    url: string;
    /** The node every sentinel still up names as primary, once it says `role:master` itself. */
    primary(): Promise<TestRedis>;
    /** Resolves once every sentinel still up (2 at least) names a primary other than `port` (a failover finished). */
    failedOver(port: number, timeoutMs: number): Promise<TestRedis>;
    /**
     * What the sentinels and the data nodes logged about failovers and replication (elections, promotions,
     * syncs), oldest first, each line prefixed by its process' port: why a failover took as long as it did.
     */
    timeline(): { at: number; line: string }[];
    cleanup(): Promise<void>;
}

export async function startSentinelRedis(opts: { replicas?: number; name?: string } = {}): Promise<TestSentinelRedis> {
    const name = opts.name ?? "egress-main";
    const password = `pw-${Math.random().toString(36).slice(2)}-secret`;
    const nodes: TestRedis[] = [];
    const sentinels: TestRedis[] = [];
    const cleanup = async () => {
        await Promise.all([...sentinels, ...nodes].map((r) => r.cleanup()));
    };
    try {
        nodes.push(await startRedis({ password }));
        const primaryPort = nodes[0].port;
        for (let i = 0; i < (opts.replicas ?? 2); i++)
            nodes.push(await startRedis({ password, replicaOf: primaryPort }));
        await waitReplicasOnline(nodes[0], nodes.length - 1);
        const conf = () => [
            `sentinel monitor ${name} 127.0.0.1 ${primaryPort} 2`,
            `sentinel auth-pass ${name} ${password}`,
            // Not 1000: on a loaded CI machine a sentinel then found the just-promoted primary "down"
            // within 2 s and failed over a second time; the stale primary, replica-less, refused every
            // confirmed grant until Sentinel demoted it 10 s later (leasing resumed after ~20 s).
            `sentinel down-after-milliseconds ${name} 2500`,
            `sentinel failover-timeout ${name} 5000`,
            `sentinel parallel-syncs ${name} 1`,
        ];
        for (let i = 0; i < 3; i++) sentinels.push(await startRedis({ password, sentinel: conf }));
    } catch (e) {
        await cleanup();
        throw e;
    }
    const primaryPortOf = (s: TestRedis) =>
        ask(s, async (r) => Number(((await r.call("SENTINEL", "get-master-addr-by-name", name)) as string[])[1]));
    /** What each sentinel still running names as primary (a killed one is left out). */
    const answers = async () =>
        (await Promise.all(sentinels.map((s) => primaryPortOf(s).catch(() => undefined)))).filter(
            (p): p is number => p !== undefined,
        );
    const byPort = (port: number) => {
        const n = nodes.find((x) => x.port === port);
        if (!n) throw new Error(`the sentinels name 127.0.0.1:${port} as primary, which is not one of the nodes`);
        return n;
    };
    return {
        password,
        name,
        nodes,
        sentinels,
        url: `redis+sentinel://:${password}@${sentinels.map((s) => `127.0.0.1:${s.port}`).join(",")}/${name}`,
        async primary() {
            // Every sentinel still up agrees, and the node itself says it is a primary: a test must not
            // kill a replica that one sentinel still lists from before a failover settled.
            const deadline = Date.now() + 15_000;
            for (;;) {
                const seen = await answers();
                const node = seen.length >= 2 && seen.every((p) => p === seen[0]) ? byPort(seen[0]) : undefined;
                if (node && /^role:master/m.test(await ask(node, (r) => r.info("replication")).catch(() => "")))
                    return node;
                if (Date.now() > deadline) throw new Error(`no settled primary within 15 s: sentinels say ${seen}`);
                await new Promise((r) => setTimeout(r, 100));
            }
        },
        async failedOver(port, timeoutMs) {
            const deadline = Date.now() + timeoutMs;
            for (;;) {
                const seen = await answers();
                if (seen.length >= 2 && seen.every((p) => p !== port && p === seen[0])) return byPort(seen[0]);
                if (Date.now() > deadline)
                    throw new Error(`no failover from ${port} within ${timeoutMs} ms: sentinels say ${seen}`);
                await new Promise((r) => setTimeout(r, 100));
            }
        },
        timeline: () => failoverTimeline(sentinels, nodes),
        cleanup,
    };
}

/** Sentinel events (`+sdown`, `+elected-leader`, `-failover-abort-…`) and replication lines, by log time. */
function failoverTimeline(sentinels: TestRedis[], nodes: TestRedis[]): { at: number; line: string }[] {
    const interesting =
        /[+-][a-z-]+ |MASTER <-> REPLICA|PSYNC|Synchronization with replica|MASTER MODE|Connecting to MASTER/;
    const lines = [
        ...sentinels.map((s) => ["sentinel", s] as const),
        ...nodes.map((n) => ["node", n] as const),
    ].flatMap(([kind, r]) => {
        return (redisLog(r.dir) ?? "")
            .split("\n")
            .filter((l) => interesting.test(l))
            .map((l) => {
                // "pid:X 06 Dec 2026 18:30:44.699 # +sdown master …": the time, then the rest.
                const m = /^\d+:\w (\d+ \w+ \d+ [\d:.]+) . (.*)$/.exec(l);
                return m ? { at: Date.parse(m[1]), line: `${m[1].slice(-12)} ${kind} ${r.port}: ${m[2]}` } : undefined;
            })
            .filter((x): x is { at: number; line: string } => x !== undefined);
    });
    return lines.sort((a, b) => a.at - b.at);
}

/** `f` on a short-lived connection to `s` (a test asks rarely; a long-lived one would outlive a kill). */
async function ask<T>(s: TestRedis, f: (r: Redis) => Promise<T>): Promise<T> {
    const r = new Redis(s.url, { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
    r.on("error", () => undefined);
    try {
        await r.connect();
        return await f(r);
    } finally {
        r.disconnect();
    }
}

/**
 * Resolves once `primary` has `n` replicas online (in sync): a sentinel started before the replicas are
 * would see a primary without replicas to promote, and a grant that waits for a replica needs one.
 */
export async function waitReplicasOnline(primary: TestRedis, n: number, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const info = await ask(primary, (r) => r.info("replication"));
        const online = (info.match(/^slave\d+:.*state=online/gm) ?? []).length;
        if (online >= n) return;
        if (Date.now() > deadline) throw new Error(`${online} of ${n} replicas online after ${timeoutMs} ms:\n${info}`);
        await new Promise((r) => setTimeout(r, 50));
    }
}

/**
 * How long the sentinels spent on failover attempts that did not elect a leader: from the first
 * `+try-failover` after `since` to the last one that followed a `-failover-abort-not-elected`. A split vote
 * (two sentinels voting for themselves in the same instant, likeliest with only two of three up) is
 * retried after 2 × `failover-timeout`; several sentinels trying in one round is not a retry. Redis' time,
 * not egress'.
 */
export function electionRetryMs(timeline: { at: number; line: string }[], since: number): number {
    const recent = timeline.filter((e) => e.at >= since - 1000);
    const aborted = recent.find((e) => /-failover-abort-not-elected /.test(e.line));
    const tries = recent.filter((e) => /\+try-failover /.test(e.line)).map((e) => e.at);
    if (!aborted || tries.length === 0) return 0;
    const retries = tries.filter((at) => at > aborted.at);
    return retries.length > 0 ? retries[retries.length - 1] - tries[0] : 0;
}
