/**
 * A Redis primary killed under lease load, and what the crawlers saw: shared by the failover tests of
 * each way egress can follow a primary (store-sentinel: a `redis+sentinel://` URL; store-haproxy-redis:
 * HAProxy in front, deploy/haproxy-redis.cfg).
 */
import type { TestContext } from "node:test";
import assert from "node:assert/strict";
import type { ServeProcess } from "./processes";

import { electionRetryMs, type TestSentinelRedis } from "./redis-sentinel";
import { doubleLeases, leaseLoad, lostGrant } from "./lease-load";
import { waitFor } from "./harness";

/** The service under test, the Redis whose primary is killed, and how `egress doctor --store` reaches it. */
export interface Failover {
    svc: ServeProcess;
    redis: TestSentinelRedis;
    doctor: () => { stdout: string; stderr: string };
    /** What doctor prints for a store that answers (the URL redacted). */
    doctorSays: RegExp;
    /**
     * Whether grants wait for a replica (`--store-grant-replicas`, a sentinel URL's default): then no grant
     * is lost and no member is ever in two leases. Otherwise a double lease is allowed through a lost grant.
     */
    confirmedGrants: boolean;
    /** More of what happened, for a failover slower than the goal (HAProxy's server state changes). */
    moreTimeline?: () => string[];
}

/**
 * Kills the primary under lease load and measures what the crawlers saw (printed as a `#` line): time
 * from the kill to the first grant by the promoted replica, 503s, other 5xx, double leases.
 */
export async function killPrimaryUnderLoad(t: TestContext, label: string, f: Failover): Promise<void> {
    const { svc, redis } = f;
    const logged = svc.entries.length;
    const load = leaseLoad(svc, { clients: 4, pool: "web" });
    t.after(() => load.stop().catch(() => undefined)); // a failed assertion must not leave them running
    await waitFor("leases granted before the kill", () => load.count("lease 201") >= 50, 30_000, 25);
    const old = await redis.primary();
    const before = load.grants.length;
    await old.kill();
    const killedAt = Date.now();
    // leasedAt is Redis' clock (TIME), the same host's: a grant stamped after the kill is the new primary's.
    const resumed = await waitFor(
        "a lease granted by the promoted replica",
        () => load.grants.find((g) => g.leasedAt > killedAt + 50),
        30_000,
        50,
    );
    const resumeMs = resumed.leasedAt - killedAt;
    const promoted = await redis.failedOver(old.port, 10_000);
    await new Promise((r) => setTimeout(r, 3000)); // leasing goes on from the promoted replica
    await load.stop();
    const refused = load.count("lease 503 store_unavailable") + load.count("release 503 store_unavailable");
    const doubles = doubleLeases(load.grants);
    const lost = load.grants.filter(lostGrant);
    // Informational: whether the only replica kept leading through the failover (a 5 s lock, cluster.ts).
    const leading = svc.entries
        .slice(logged)
        .filter((e) => /leading the stack|leader lock/.test(e.msg))
        .map((e) => `${e.msg} ${e.fence ?? ""}`.trim());
    // The goal is Sentinel's usual failover plus egress' part. A failed election is retried only after
    // 2 × failover-timeout, Redis' own wait (docs/operations.md): it is measured and left out of the bound.
    const timeline = redis.timeline();
    const retried = electionRetryMs(timeline, killedAt);
    process.stdout.write(
        `# ${label}: failover ${old.port} → ${promoted.port}: leasing resumed after ${resumeMs} ms ` +
            `(Sentinel's election retries ${retried} ms); ` +
            `${refused} × 503 store_unavailable, other 5xx ${JSON.stringify(load.otherFiveHundreds())}; ` +
            `${load.grants.length - before} grants after the kill, ${lost.length} lost (release 404), ` +
            `${doubles.length} double leases ${JSON.stringify(doubles.map(([a, b]) => [a.proxy, a.id, b.id]))}; ` +
            `leader ${JSON.stringify(leading)}; answers ${JSON.stringify(Object.fromEntries(load.seen))}\n`,
    );
    assert.notEqual(promoted.port, old.port);
    assert.ok(refused > 0, "the kill interrupted leasing (the node killed was the primary)");
    assert.ok(
        resumeMs - retried <= 10_000,
        `leasing resumed after ${resumeMs} ms, ${retried} ms of it Sentinel's election retries ` +
            `(killed at ${new Date(killedAt).toISOString()}); what happened:\n` +
            [...timeline.map((e) => e.line), ...(f.moreTimeline?.() ?? [])].join("\n"),
    );
    assert.deepEqual(load.otherFiveHundreds(), []);
    if (f.confirmedGrants) {
        assert.deepEqual(
            lost.map((g) => g.id),
            [],
            "a grant confirmed by a replica is never lost",
        );
        assert.deepEqual(
            doubles.map(([a, b]) => [a.proxy, a.id, b.id]),
            [],
            "no member in two leases at once",
        );
    }
    // Unconfirmed grants: a member in two leases at once only through a grant the failover lost (async replication).
    for (const [a, b] of doubles)
        assert.ok(
            a.releaseStatus === 404 || b.releaseStatus === 404,
            `${a.proxy} in leases ${a.id} and ${b.id} at once, neither lost by the failover`,
        );
    const l = await svc.call("POST", "/v1/leases", { body: { pool: "web" } });
    assert.equal(l.status, 201, JSON.stringify(l.body));
    assert.equal(
        (await svc.call("POST", `/v1/leases/${l.body.lease.id}/release`, { body: { outcome: "ok" } })).status,
        200,
    );
    const doctor = f.doctor();
    assert.match(doctor.stdout + doctor.stderr, f.doctorSays);
}
