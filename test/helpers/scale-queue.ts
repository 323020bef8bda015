import Redis from "ioredis";
import { createLogger } from "../../src/log/logger";
import { CLUSTER_KEYS } from "../../src/state/cluster/records";
import { ScaleQueue } from "../../src/state/cluster/scale-queue";
import { startRedis, TestRedis } from "./redis";

/**
 * A real redis-server and the scale queues of replicas of stack `prefix` on it, in one process
 * (test/service/cluster-scale-queue*.test.ts): `queue(self)` is replica `self`'s queue, started;
 * `holdLock(self)` makes `self` the lock's holder, as the claim loop would; `close` stops them all.
 */
export async function scaleQueueBench(prefix: string) {
    const redis: TestRedis = await startRedis();
    const raw = new Redis(redis.url);
    const log = createLogger({ level: "silent" });
    const queues: ScaleQueue[] = [];
    return {
        redis,
        raw,
        async queue(self: string): Promise<ScaleQueue> {
            const q = new ScaleQueue({ url: redis.url, prefix, self, log, intervalMs: 50 });
            queues.push(q);
            await q.start();
            return q;
        },
        holdLock: (id: string) => raw.set(prefix + CLUSTER_KEYS.leader, JSON.stringify({ id, token: 1, since: "" })),
        async close(): Promise<void> {
            for (const q of queues) await q.close();
            raw.disconnect();
            await redis.cleanup();
        },
    };
}
