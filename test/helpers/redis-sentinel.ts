/**
 * A throwaway Sentinel-watched Redis for one test, as production runs it but on loopback: a primary,
 * `replicas` replicas (`--replicaof`) and three sentinels (quorum 2) with short timeouts
 * (`down-after-milliseconds` 1000, `failover-timeout` 5000), all with one password, each a
 * test/helpers/redis.ts server. `url` is the `redis+sentinel://` store URL egress is given.
 */
import Redis from "ioredis";
import { startRedis, type TestRedis } from "./redis";

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
            `sentinel down-after-milliseconds ${name} 1000`,
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
        cleanup,
    };
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
