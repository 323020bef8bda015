/**
 * The pick's order and answers that the Redis store's Lua computes from state it reads once per run
 * (pool settings and rules cached in the run, a pool's member count read only when nothing was found,
 * the LRU score taken from the scan): the memory lease manager and the Redis lease store (a real
 * redis-server) run the same checks, so the Lua's shortcuts (docs/bench.md, issue 19) cannot drift from
 * the memory manager's rules.
 * - without `pool`, the least recently released member of every pool is picked;
 * - a revoked member goes back with the history it had before its lease (not first, not last);
 * - a pool without members answers no-members, a full scope none-available;
 * - memberConcurrency changed while a member carries shared leases takes effect at once.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { publishedRedisStore } from "../helpers/redis-lease-store";
import type { RedisLeaseStore } from "../../src/service/store";
import {
    LeaseManager,
    type AcquireRequest,
    type AcquireResult,
    type Lease,
    type ReleaseOutcome,
} from "../../src/service/leases";

interface Store extends Pick<LeaseManager, "revoke" | "setMembers"> {
    acquire(req: AcquireRequest): AcquireResult | Promise<AcquireResult>;
    release(id: string, outcome: ReleaseOutcome): unknown;
}

const LRU_MEMBERS = ["a-0", "a-1", "a-2", "b-0"].map((id) => ({ id, pool: id.slice(0, 1), eligible: true }));
const LRU_POOLS = { a: { cooldownSeconds: 0 }, b: { cooldownSeconds: 0 }, empty: { cooldownSeconds: 0 } };
const SHARED_MEMBERS = [{ id: "s-0", pool: "s", eligible: true }];
const sharedPools = (memberConcurrency: number) => ({ s: { cooldownSeconds: 0, memberConcurrency } });
const SHARED: AcquireRequest = { pool: "s", shared: true };

/** Redis' clock is in ms: releases this far apart get distinct LRU scores on either store. */
const tick = () => new Promise((r) => setTimeout(r, 5));

async function granted(store: Store, req: AcquireRequest = {}): Promise<Lease> {
    const r = await store.acquire(req);
    assert.ok(r.ok, `expected a grant for ${JSON.stringify(req)}, got ${JSON.stringify(r)}`);
    return r.lease;
}

async function refusedWith(store: Store, req: AcquireRequest, reason: string): Promise<void> {
    const r = await store.acquire(req);
    assert.equal(r.ok ? `granted ${r.lease.proxyId}` : r.reason, reason, `acquire ${JSON.stringify(req)}`);
}

/** Releases the leases in the given order, a tick apart: the first released is the least recently used. */
async function releaseInOrder(store: Store, leases: Lease[]): Promise<void> {
    for (const l of leases) {
        await store.release(l.id, "ok");
        await tick();
    }
}

/** `settled`: what the store needs after a revoke or setMembers before the next acquire sees it. */
async function checkPickOrder(store: Store, settled: () => Promise<void>): Promise<void> {
    const all = [await granted(store), await granted(store), await granted(store), await granted(store)];
    assert.deepEqual(all.map((l) => l.proxyId).sort(), ["a-0", "a-1", "a-2", "b-0"], "four acquires, four members");
    await refusedWith(store, {}, "none-available");
    await refusedWith(store, { pool: "empty" }, "no-members");
    const by = (id: string) => all.find((l) => l.proxyId === id)!;

    // Least recently released first, across pools.
    await releaseInOrder(store, ["b-0", "a-2", "a-0", "a-1"].map(by));
    const again = [await granted(store), await granted(store), await granted(store), await granted(store)];
    assert.deepEqual(
        again.map((l) => l.proxyId),
        ["b-0", "a-2", "a-0", "a-1"],
        "without a pool: the LRU member of all pools",
    );

    // A revoked member keeps the history it had before its lease: between the older and the newer ones.
    await releaseInOrder(
        store,
        ["a-2", "b-0", "a-0", "a-1"].map((id) => again.find((l) => l.proxyId === id)!),
    );
    const b = await granted(store, { pool: "b" });
    assert.equal(b.proxyId, "b-0");
    store.revoke("b-0", { reason: "gone", member: "b-0", message: "member b-0 is gone" });
    await settled();
    const after = [await granted(store), await granted(store), await granted(store), await granted(store)];
    assert.deepEqual(
        after.map((l) => l.proxyId),
        ["a-2", "b-0", "a-0", "a-1"],
        "the revoked member back where its last release put it",
    );
    await releaseInOrder(store, after);
}

async function checkConcurrencyChange(store: Store, settled: () => Promise<void>): Promise<void> {
    store.setMembers(SHARED_MEMBERS, sharedPools(2));
    await settled();
    const first = await granted(store, SHARED);
    store.setMembers(SHARED_MEMBERS, sharedPools(1));
    await settled();
    await refusedWith(store, SHARED, "none-available");
    store.setMembers(SHARED_MEMBERS, sharedPools(3));
    await settled();
    const second = await granted(store, SHARED);
    assert.equal(second.proxyId, "s-0", "memberConcurrency 3: the member carries a second shared lease");
    await store.release(first.id, "ok");
    await store.release(second.id, "ok");
}

test("the memory lease manager: pick order, revoke history, no-members, a memberConcurrency change", async () => {
    const leases = new LeaseManager({ targetCooldownSeconds: 0 });
    leases.setMembers(LRU_MEMBERS, LRU_POOLS);
    await checkPickOrder(leases, async () => undefined);
    await checkConcurrencyChange(leases, async () => undefined);
});

describe("the Redis lease store (the same, in Lua)", () => {
    let redis: Awaited<ReturnType<typeof publishedRedisStore>>;
    let store: RedisLeaseStore;
    // The revoke and the publication are each one round trip later.
    const settled = () => new Promise<void>((r) => setTimeout(r, 200));
    before(async () => {
        redis = await publishedRedisStore("egress:pick-order:", LRU_MEMBERS, LRU_POOLS);
        store = redis.store;
    });
    after(async () => {
        await redis?.close();
    });

    test("pick order across pools, a revoked member's history, no-members", async () => {
        await checkPickOrder(store, settled);
    });

    test("a memberConcurrency change under a shared lease takes effect at once", async () => {
        await checkConcurrencyChange(store, settled);
    });
});
