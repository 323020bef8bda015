/**
 * A Redis lease store on a redis-server of its own, with members published: for the tests that run the
 * same checks on the memory manager and on the Redis store (lease-exclude, zones, politeness-store,
 * member-concurrency). No per-target rest, as those tests' memory managers have.
 */
import assert from "node:assert/strict";
import { startRedis } from "./redis";
import { createLogger } from "../../src/log/logger";
import { RedisLeaseStore } from "../../src/service/store";

type Publish = Parameters<RedisLeaseStore["setMembers"]>;

export async function publishedRedisStore(
    prefix: string,
    members: Publish[0],
    pools: Publish[1],
): Promise<{ store: RedisLeaseStore; close(): Promise<void> }> {
    const redis = await startRedis();
    const store = new RedisLeaseStore({
        url: redis.url,
        prefix,
        log: createLogger({ level: "warn" }),
        targetCooldownSeconds: 0,
    });
    assert.equal(await store.connect(5000), true);
    store.setMembers(members, pools);
    await new Promise((r) => setTimeout(r, 200)); // the publication is one round trip after a microtask
    return {
        store,
        close: async () => {
            await store.close();
            await redis.cleanup();
        },
    };
}
