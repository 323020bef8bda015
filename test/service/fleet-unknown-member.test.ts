/**
 * Replicas share one Redis lease store, but each reads the members from the stack itself: for a moment
 * after the leader published new members (a scale-up, a failover's convergence), the store can grant a
 * follower a member its fleet does not know yet. That answered 500 and left the lease held until its
 * TTL (seen in a CI trial of service/replicas-postgres). With a real redis-server, a publishing store
 * (the leader's) and a follower's Fleet over a non-publishing store that knows fewer members:
 * - a member unknown to the follower is passed over, its lease given straight back, and a known member
 *   is granted instead;
 * - with no known member free, the answer is the store's plain refusal, and every passed-over member is
 *   free again (the leader's store leases each of them);
 * - past 8 unknown members the follower answers none-available with a 1 s retry, and holds nothing.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createLogger } from "../../src/log/logger";
import { Fleet, type HealthSource } from "../../src/service/fleet/fleet";
import { RedisLeaseStore } from "../../src/service/store";
import type { PoolConfig, ProxyMember } from "../../src/model";
import { startRedis, type TestRedis } from "../helpers/redis";

const member = (i: number): ProxyMember => ({
    id: `web-${i}`,
    pool: "web",
    provider: "racks",
    kind: "static",
    index: i,
    host: "127.0.0.1",
    port: 4000 + i,
    url: `http://127.0.0.1:${4000 + i}`,
    zone: "",
});
const POOLS = [{ name: "web", cooldownSeconds: 0, sessionTtlSeconds: 600 } as PoolConfig];
const healthy: HealthSource = { setMembers() {}, get: () => ({ state: "healthy" }) };
let redis: TestRedis;
const stores: RedisLeaseStore[] = [];

before(async () => {
    redis = await startRedis();
});
after(async () => {
    for (const s of stores) await s.close();
    await redis?.cleanup();
});

/** The leader's fleet (it publishes `all`) and a follower's fleet that knows only `known`, on one prefix. */
async function replicas(prefix: string, all: number, known: number[]) {
    const open = async (publisher: boolean) => {
        const s = new RedisLeaseStore({
            url: redis.url,
            prefix,
            log: createLogger({ level: "warn" }),
            targetCooldownSeconds: 0,
        });
        stores.push(s);
        s.setPublisher(publisher);
        assert.equal(await s.connect(5000), true);
        return s;
    };
    const leaderStore = await open(true);
    const leader = new Fleet(leaderStore, healthy);
    leader.sync(
        Array.from({ length: all }, (_, i) => member(i)),
        POOLS,
    );
    const follower = new Fleet(await open(false), healthy);
    follower.sync(known.map(member), POOLS);
    await new Promise((r) => setTimeout(r, 300)); // the leader's publication is one round trip away
    return { leader, follower };
}

const grantedId = (r: Awaited<ReturnType<Fleet["acquire"]>>) => (r.ok ? r.lease.proxy.id : undefined);

test("an unknown member is passed over and given back; a known one is granted", async () => {
    const { leader, follower } = await replicas("egress:unk1:", 4, [0, 2]);
    assert.equal(grantedId(await leader.acquire({ pool: "web" })), "web-0", "web-0 is held elsewhere");
    const got = await follower.acquire({ pool: "web" });
    assert.equal(grantedId(got), "web-2", `web-1 is unknown here, web-2 is not: ${JSON.stringify(got)}`);
    const rest = [grantedId(await leader.acquire({ pool: "web" })), grantedId(await leader.acquire({ pool: "web" }))];
    assert.deepEqual(rest.sort(), ["web-1", "web-3"], "web-1 was given back at once");
});

test("no known member free: a plain refusal, and the passed-over members are free again", async () => {
    const { leader, follower } = await replicas("egress:unk2:", 4, [0]);
    assert.equal(grantedId(await leader.acquire({ pool: "web" })), "web-0");
    const got = await follower.acquire({ pool: "web" });
    assert.ok(!got.ok && got.reason === "none-available", JSON.stringify(got));
    const again = [1, 2, 3].map(async () => grantedId(await leader.acquire({ pool: "web" })));
    assert.deepEqual((await Promise.all(again)).sort(), ["web-1", "web-2", "web-3"], "none of them left held");
});

test("past 8 unknown members: none-available, retry in 1 s, nothing held", async () => {
    const { leader, follower } = await replicas("egress:unk3:", 12, [0]);
    assert.equal(grantedId(await leader.acquire({ pool: "web" })), "web-0");
    const got = await follower.acquire({ pool: "web" });
    assert.ok(!got.ok && got.reason === "none-available" && got.retryAfterSeconds === 1, JSON.stringify(got));
    assert.match((got as { message: string }).message, /has not read them yet; retry in 1s/);
    const free = [];
    for (let i = 1; i < 12; i++) free.push(grantedId(await leader.acquire({ pool: "web" })));
    assert.equal(new Set(free).size, 11, `all 11 others are free: ${free}`);
});
