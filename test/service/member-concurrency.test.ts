/**
 * Shared (gateway) leases and `gateway.memberConcurrency`: the memory lease manager and the Redis lease
 * store (its Lua, a real redis-server) run the same checks. With memberConcurrency 3 and 2 members, 6
 * shared acquires are granted (least loaded first), the 7th is not; an exclusive acquire is refused on a
 * member carrying a shared lease and granted on a free one; a member under an exclusive lease carries no
 * shared one; releases and expiries free the slots.
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
    type ReleaseResult,
} from "../../src/service/leases";

interface Store {
    acquire(req: AcquireRequest): AcquireResult | Promise<AcquireResult>;
    release(id: string, outcome: ReleaseOutcome): unknown;
    isLeased(id: string): boolean;
}

const MEMBERS = ["m-0", "m-1"].map((id) => ({ id, pool: "p", eligible: true }));
const POOLS = { p: { cooldownSeconds: 0, memberConcurrency: 3 } };
const SHARED: AcquireRequest = { pool: "p", shared: true };
const EXCLUSIVE: AcquireRequest = { pool: "p" };

async function granted(store: Store, req: AcquireRequest): Promise<Lease> {
    const r = await store.acquire(req);
    assert.ok(r.ok, `expected a grant for ${JSON.stringify(req)}, got ${JSON.stringify(r)}`);
    return r.lease;
}

async function refused(store: Store, req: AcquireRequest, why: string): Promise<void> {
    const r = await store.acquire(req);
    assert.equal(r.ok, false, `${why}: expected a refusal, got ${JSON.stringify(r)}`);
    assert.equal(!r.ok && r.reason, "none-available", why);
}

function perMember(leases: readonly Lease[]): Record<string, number> {
    const out: Record<string, number> = {};
    for (const l of leases) out[l.proxyId] = (out[l.proxyId] ?? 0) + 1;
    return out;
}

/** The same checks on either store (each starts and ends with every member free). */
async function checkSharing(store: Store): Promise<void> {
    // Least loaded first: the first two shared acquires land on different members.
    const first = [await granted(store, SHARED), await granted(store, SHARED)];
    assert.notEqual(first[0].proxyId, first[1].proxyId, "the second shared acquire goes to the idle member");
    const six = [...first];
    for (let i = 0; i < 4; i++) six.push(await granted(store, SHARED));
    assert.deepEqual(perMember(six), { "m-0": 3, "m-1": 3 }, "memberConcurrency 3 on each of 2 members");
    await refused(store, SHARED, "the 7th shared acquire: every member carries 3");
    await refused(store, EXCLUSIVE, "an exclusive acquire while every member carries shared leases");

    // One release frees one slot; the member stays in use while it carries the other two.
    const onM0 = six.filter((l) => l.proxyId === "m-0");
    const onM1 = six.filter((l) => l.proxyId === "m-1");
    await store.release(onM0[0].id, "ok");
    assert.equal(store.isLeased("m-0"), true, "m-0 still carries two shared leases");
    const back = await granted(store, SHARED);
    assert.equal(back.proxyId, "m-0", "the freed slot is taken again");
    await refused(store, EXCLUSIVE, "m-0 and m-1 still carry shared leases");

    // m-0 free of every shared lease: an exclusive acquire gets it; m-1 (still carrying) does not.
    for (const l of [...onM0.slice(1), back]) await store.release(l.id, "ok");
    assert.equal(store.isLeased("m-0"), false);
    const excl = await granted(store, EXCLUSIVE);
    assert.equal(excl.proxyId, "m-0", "the exclusive lease goes to the free member");
    await refused(store, EXCLUSIVE, "m-1 carries shared leases, m-0 is leased");

    // A member under an exclusive lease carries no shared one: only m-1's freed slot is granted.
    await store.release(onM1[0].id, "ok");
    const slot = await granted(store, SHARED);
    assert.equal(slot.proxyId, "m-1");
    await refused(store, SHARED, "m-0 is under an exclusive lease, m-1 carries 3");
    await store.release(excl.id, "ok");
    const onFree = await granted(store, SHARED);
    assert.equal(onFree.proxyId, "m-0", "once the exclusive lease ends, m-0 takes shared leases");
    for (const l of [...onM1.slice(1), slot, onFree]) await store.release(l.id, "ok");

    // Expiry frees the slots too (the lazy path: the next acquire ends the leases whose TTL ran out).
    const short: Lease[] = [];
    for (let i = 0; i < 6; i++) short.push(await granted(store, { ...SHARED, ttlSeconds: 1 }));
    await refused(store, SHARED, "6 short shared leases in flight");
    await new Promise((r) => setTimeout(r, 1300));
    const afterExpiry = await granted(store, EXCLUSIVE);
    const again: Lease[] = [];
    for (let i = 0; i < 3; i++) again.push(await granted(store, SHARED));
    assert.deepEqual(perMember(again), { [afterExpiry.proxyId === "m-0" ? "m-1" : "m-0"]: 3 });
    await refused(store, SHARED, "one member exclusive, the other carries 3");
    for (const l of [afterExpiry, ...again]) await store.release(l.id, "ok");
    // The Redis store's sync reads see other leases' expiry at its next view refresh (every second).
    for (let i = 0; i < 30 && (store.isLeased("m-0") || store.isLeased("m-1")); i++)
        await new Promise((r) => setTimeout(r, 100));
    assert.equal(store.isLeased("m-0") || store.isLeased("m-1"), false, "every slot free at the end");
}

/** A revoke (a drain ran out, a repair) ends every shared lease of the member; it carries 3 again after. */
async function checkRevoke(store: Store & Pick<LeaseManager, "revoke">): Promise<void> {
    const three = [await granted(store, SHARED), await granted(store, SHARED), await granted(store, SHARED)];
    const m = three[0].proxyId;
    const on = three.filter((l) => l.proxyId === m);
    assert.equal(on.length, 2, "least loaded first: the third shared lease shares the first one's member");
    store.revoke(m, { reason: "gone", member: m, message: `member ${m} is gone` });
    await new Promise((r) => setTimeout(r, 200)); // the Redis store's revoke is one round trip later
    for (const l of on) {
        const r = (await store.release(l.id, "ok")) as ReleaseResult;
        assert.equal(!r.ok && r.reason, "expired", "a revoked shared lease answers 410");
    }
    for (const l of three.filter((x) => x.proxyId !== m)) await store.release(l.id, "ok");
    const six: Lease[] = [];
    for (let i = 0; i < 6; i++) six.push(await granted(store, SHARED));
    assert.deepEqual(perMember(six), { "m-0": 3, "m-1": 3 }, "the revoked member carries 3 again");
    for (const l of six) await store.release(l.id, "ok");
}

/** A member that leaves the stack loses every shared lease it carries (410); back, it carries 3 again. */
async function checkRemoval(store: Store & Pick<LeaseManager, "setMembers">, published: () => Promise<void>) {
    const three = [await granted(store, SHARED), await granted(store, SHARED), await granted(store, SHARED)];
    const m = three[0].proxyId;
    store.setMembers(
        MEMBERS.filter((x) => x.id !== m),
        POOLS,
    );
    await published();
    for (const l of three.filter((x) => x.proxyId === m)) {
        const r = (await store.release(l.id, "ok")) as ReleaseResult;
        assert.equal(!r.ok && r.reason, "expired", "a removed member's shared lease answers 410");
    }
    for (const l of three.filter((x) => x.proxyId !== m)) await store.release(l.id, "ok");
    store.setMembers(MEMBERS, POOLS);
    await published();
    const six: Lease[] = [];
    for (let i = 0; i < 6; i++) six.push(await granted(store, SHARED));
    assert.deepEqual(perMember(six), { "m-0": 3, "m-1": 3 }, "the returned member carries 3 again");
    for (const l of six) await store.release(l.id, "ok");
}

test("the memory lease manager shares members between gateway leases up to memberConcurrency", async () => {
    const leases = new LeaseManager({ targetCooldownSeconds: 0 });
    leases.setMembers(MEMBERS, POOLS);
    await checkSharing(leases);
    await checkRevoke(leases);
    await checkRemoval(leases, async () => undefined);
    // memberConcurrency absent: one shared lease per member, as an exclusive one.
    leases.setMembers(MEMBERS, { p: { cooldownSeconds: 0 } });
    await granted(leases, SHARED);
    await granted(leases, SHARED);
    await refused(leases, SHARED, "memberConcurrency 1 by default");
});

describe("the Redis lease store (shared leases in Lua)", () => {
    let redis: Awaited<ReturnType<typeof publishedRedisStore>>;
    let store: RedisLeaseStore;
    before(async () => {
        redis = await publishedRedisStore("egress:member-conc:", MEMBERS, POOLS);
        store = redis.store;
    });
    after(async () => {
        await redis?.close();
    });

    test("shares members between gateway leases up to memberConcurrency", async () => {
        await checkSharing(store);
    });

    test("revoking a member ends every shared lease it carries", async () => {
        await checkRevoke(store);
    });

    test("a member leaving the stack loses every shared lease it carries", async () => {
        await checkRemoval(store, () => new Promise((r) => setTimeout(r, 200)));
    });
});
