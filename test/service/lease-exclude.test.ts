/**
 * `exclude` on an acquire (the gateway's retry asks for a member other than those that failed the
 * request): the memory lease manager and the Redis lease store (its Lua pick, a real redis-server)
 * pass over the excluded members, also a session's bound member, and answer none-available when only
 * excluded ones are free.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { publishedRedisStore } from "../helpers/redis-lease-store";
import type { RedisLeaseStore } from "../../src/service/store";
import { LeaseManager, type AcquireRequest, type AcquireResult, type ReleaseOutcome } from "../../src/service/leases";

interface Store {
    acquire(req: AcquireRequest): AcquireResult | Promise<AcquireResult>;
    release(id: string, outcome: ReleaseOutcome): unknown;
}

const MEMBERS = ["m-0", "m-1", "m-2"].map((id) => ({ id, pool: "p", eligible: true }));

/** The same checks on either store. */
async function checkExclude(store: Store): Promise<void> {
    const first = await store.acquire({ pool: "p" });
    assert.ok(first.ok, JSON.stringify(first));
    await store.release(first.lease.id, "error");
    // The least recently used member would be one of the others anyway; exclude them all but one.
    const others = MEMBERS.map((m) => m.id).filter((id) => id !== first.lease.proxyId);
    const only = await store.acquire({ pool: "p", exclude: [others[0], others[1]] });
    assert.ok(only.ok, JSON.stringify(only));
    assert.equal(only.lease.proxyId, first.lease.proxyId, "the one member not excluded, though used most recently");
    await store.release(only.lease.id, "ok");
    const none = await store.acquire({ pool: "p", exclude: MEMBERS.map((m) => m.id) });
    assert.equal(none.ok, false);
    assert.equal(!none.ok && none.reason, "none-available");
    // A session bound to an excluded member moves.
    const s1 = await store.acquire({ pool: "p", session: "s" });
    assert.ok(s1.ok);
    await store.release(s1.lease.id, "ok");
    const moved = await store.acquire({ pool: "p", session: "s", exclude: [s1.lease.proxyId] });
    assert.ok(moved.ok);
    assert.notEqual(moved.lease.proxyId, s1.lease.proxyId);
    assert.equal(moved.rebound, true);
    await store.release(moved.lease.id, "ok");
}

test("the memory lease manager passes over excluded members", async () => {
    const leases = new LeaseManager({ targetCooldownSeconds: 0 });
    leases.setMembers(MEMBERS, { p: { cooldownSeconds: 0 } });
    await checkExclude(leases);
});

describe("the Redis lease store (the pick in Lua)", () => {
    let redis: Awaited<ReturnType<typeof publishedRedisStore>>;
    let store: RedisLeaseStore;
    before(async () => {
        redis = await publishedRedisStore("egress:exclude:", MEMBERS, { p: { cooldownSeconds: 0 } });
        store = redis.store;
    });
    after(async () => {
        await redis?.close();
    });

    test("passes over excluded members", async () => {
        await checkExclude(store);
    });
});
