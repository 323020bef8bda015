/**
 * Lease grants confirmed by a Redis replica before they are answered (src/service/store/grant-replicas.ts,
 * issue 35), on real redis-servers: a primary alone cannot confirm a grant, so it is withdrawn and answered
 * 503 (the member stays free); with a replica online the grant is answered and the replica has it; a
 * replica stopped (SIGSTOP: it keeps its connection, acknowledges nothing) withdraws grants again, and
 * once it runs again they are answered.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import Redis from "ioredis";
import { startRedis, type TestRedis } from "../helpers/redis";
import { waitReplicasOnline } from "../helpers/redis-sentinel";
import { createLogger } from "../../src/log/logger";
import { RedisLeaseStore, StoreUnavailableError } from "../../src/service/store";

const PREFIX = "egress:grants:";
const MEMBERS = [{ id: "web-0", pool: "web", eligible: true }];
let primary: TestRedis;
let replica: TestRedis | undefined;
const stores: RedisLeaseStore[] = [];

/**
 * A store on `url` whose grants wait for `grantReplicas` replicas, `waitMs` at most: the test of a grant that
 * no replica confirms keeps it short; those that expect confirmation allow for a loaded CI machine.
 */
async function storeOn(url: string, grantReplicas: number, waitMs = 200): Promise<RedisLeaseStore> {
    const store = new RedisLeaseStore({
        url,
        prefix: PREFIX,
        log: createLogger({ level: "error" }),
        targetCooldownSeconds: 0,
        grantReplicas,
        grantWaitMs: waitMs,
    });
    stores.push(store);
    assert.equal(await store.connect(5000), true);
    store.setMembers(MEMBERS, { web: { cooldownSeconds: 0 } });
    await new Promise((r) => setTimeout(r, 200)); // published one round trip after a microtask
    return store;
}

before(async () => {
    primary = await startRedis();
});
after(async () => {
    for (const s of stores) await s.close();
    if (replica) process.kill(replica.pid()!, "SIGCONT");
    await replica?.cleanup();
    await primary.cleanup();
});

test("a primary with no replica cannot confirm a grant: it is withdrawn, answered 503, and the member stays free", async () => {
    const waiting = await storeOn(primary.url, 1);
    await assert.rejects(waiting.acquire({ pool: "web" }), (e: unknown) => {
        assert.ok(e instanceof StoreUnavailableError);
        assert.match((e as Error).message, /no replica of the lease store confirmed the grant within 200 ms/);
        return true;
    });
    // Another store that waits for none leases the same member at once: nothing was left leased.
    const r = await (await storeOn(primary.url, 0)).acquire({ pool: "web" });
    assert.ok(r.ok, JSON.stringify(r));
    await stores[1].release(r.lease.id, "ok");
});

test("with a replica online a grant is answered, and the replica has it before the crawler does", async () => {
    replica = await startRedis({ password: primary.password, replicaOf: primary.port });
    await waitReplicasOnline(primary, 1, 30_000);
    const store = await storeOn(primary.url, 1, 2000);
    const r = await store.acquire({ pool: "web" });
    assert.ok(r.ok, JSON.stringify(r));
    // Read from the replica right away: the grant's keys are there (the WAIT returned after it had them).
    const onReplica = new Redis(replica.url);
    try {
        const keys = await onReplica.keys(`${PREFIX}*`);
        const values = await Promise.all(keys.map((k) => onReplica.dump(k)));
        assert.ok(
            values.some((v) => v?.includes(r.lease.id)),
            "the replica holds the lease id",
        );
    } finally {
        onReplica.disconnect();
    }
    await store.release(r.lease.id, "ok");

    // A replica that stops acknowledging (SIGSTOP) withdraws grants; running again, they are answered.
    process.kill(replica.pid()!, "SIGSTOP");
    await assert.rejects(store.acquire({ pool: "web" }), StoreUnavailableError);
    process.kill(replica.pid()!, "SIGCONT");
    let again: Awaited<ReturnType<RedisLeaseStore["acquire"]>> | undefined;
    for (let i = 0; i < 50 && !again?.ok; i++) again = await store.acquire({ pool: "web" }).catch(() => undefined);
    assert.ok(again?.ok, "grants are answered once the replica runs again");
});
