/**
 * The Redis lease store (its Lua, on a real redis-server) held to the same brute-force model of the lease
 * rules as the memory manager (test/helpers/lease-model.ts, test/unit/leases-property.test.ts): 10,000
 * interleaved acquire / release / clock / health / membership operations per seed. The scripts read the
 * walk's clock (RedisStoreOptions.testClock); what the store holds is read back from Redis itself: the
 * live leases, each member's published eligibility and each session's member.
 *
 * Two differences from the memory walk, both of the store's design: members released at the same moment
 * (or never leased) come in id order, Redis' sorted-set order; and idle sessions are forgotten by a key
 * expiry on Redis' own clock, which a moved clock does not reach, so here sessions outlive the walk.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import Redis from "ioredis";
import { startRedis, type TestRedis } from "../helpers/redis";
import { MODEL_TARGET_COOLDOWN_SECONDS, walkLeases, type LeaseSubject } from "../helpers/lease-model";
import { createLogger } from "../../src/log/logger";
import { RedisLeaseStore } from "../../src/service/store";

/** Longer than any walk's clock: no session is forgotten on either side. */
const SESSION_TTL = 10_000_000;

let redis: TestRedis;
let direct: Redis;
const stores: RedisLeaseStore[] = [];
before(async () => {
    redis = await startRedis();
    direct = new Redis(redis.url, { lazyConnect: true });
    await direct.connect();
});
after(async () => {
    for (const s of stores) await s.close();
    direct?.disconnect();
    await redis?.cleanup();
});

/** A store on its own prefix, driven by the walk: the clock is a key, its state read back with plain commands. */
async function redisSubject(prefix: string): Promise<LeaseSubject> {
    const store = new RedisLeaseStore({
        url: redis.url,
        prefix,
        log: createLogger({ level: "warn" }),
        targetCooldownSeconds: MODEL_TARGET_COOLDOWN_SECONDS,
        sessionTtlSeconds: SESSION_TTL,
        viewIntervalMs: 3_600_000, // read on demand only (liveLeaseIds)
        testClock: true,
    });
    stores.push(store);
    assert.equal(await store.connect(5000), true);
    let now = 0;
    return {
        setNow: async (ms) => void (await direct.set(`${prefix}clock`, String((now = ms)))),
        setMembers: async (members, pools) => {
            store.setMembers(members, pools);
            await store.published();
        },
        setEligible: async (id, eligible) => {
            store.setEligible(id, eligible);
            await store.published();
        },
        acquire: (req) => store.acquire(req),
        release: (id, outcome) => store.release(id, outcome),
        sweep: async () => {
            store.sweep();
            await store.published();
        },
        liveLeaseIds: async () => {
            await store.syncView();
            return store
                .active()
                .filter((l) => l.expiresAt > now)
                .map((l) => l.id);
        },
        eligibility: async () => {
            const out = new Map<string, boolean>();
            for (const p of ["a", "b", "c"])
                for (const [id, v] of Object.entries(await direct.hgetall(`${prefix}mem:${p}`))) out.set(id, v === "1");
            return out;
        },
        sessionMember: async (session, pool) =>
            (await direct.hget(`${prefix}sess:${pool ?? ""}\n${session}`, "member")) ?? undefined,
    };
}

for (const seed of [1, 42, 20240611]) {
    test(`10,000 random operations on the Redis store agree with the brute-force model (seed ${seed})`, async () => {
        const store = await redisSubject(`egress:prop${seed}:`);
        const { granted, sessionsUsed, stuck } = await walkLeases(store, seed, 10_000, {
            sessionTtl: { a: SESSION_TTL, b: SESSION_TTL, c: SESSION_TTL },
            ties: "id",
        });
        assert.ok(granted > 1000, `only ${granted} leases granted: the mix is not exercising contention`);
        assert.ok(stuck > 100 && sessionsUsed - stuck > 100, `sessions: ${stuck} stuck of ${sessionsUsed}`);
    });
}
