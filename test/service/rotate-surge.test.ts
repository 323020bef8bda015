/**
 * A rotation's surge grows with its backlog: members that come due while a rotation runs are replaced
 * behind its surge (rotate/run.ts), and when more come due than surge members stand, the surge grows up
 * to `maxSurge` first. Real engine, real local proxies: web-0 is made first and its rotation waits in the
 * drain on a lease the test holds, while web-1 and web-2, made seconds later, come due; once the lease is
 * released the one operation grows its surge from 1 to 2, replaces both behind it, and shrinks back.
 * Healthy never drops below the pool's count, and the pool never holds more than replicas + maxSurge.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { samplePool, TestService, TOKENS } from "../helpers/service";
import { lowerRotateFloor, rotationReads, startRotatingService } from "../helpers/rotation";
import { settled, sleep, teardown, waitFor } from "../helpers/harness";

const PERIOD_S = 20;
let svc: TestService;
const cleanup = teardown();
before(async () => {
    cleanup.add(lowerRotateFloor(5));
    svc = await startRotatingService([
        { name: "web", replicas: 1, maxReplicas: 6, maxSurge: 2, rotateAfterSeconds: PERIOD_S, drainSeconds: 120 },
    ]);
    cleanup.own(svc);
    await waitFor("web-0 healthy", async () => (await rotationReads(svc).pool("web")).healthy === 1, 30_000);
});

test("members that come due during a rotation, more than its surge: the surge grows to maxSurge, one operation replaces all three, healthy ≥ 3 throughout", async () => {
    const reads = rotationReads(svc);
    // The only member holds the lease, so web-0's rotation will wait in its drain.
    const lease = await svc.call("POST", "/v1/leases", { token: TOKENS.lease, body: { pool: "web" } });
    assert.equal(lease.status, 201);
    assert.equal(lease.body.lease.proxy.id, "web-0");
    // Seconds later, web-1 and web-2: due after web-0's rotation has started (jitters are at most 2 s here).
    await sleep(5000);
    const scaled = await svc.call("PUT", "/v1/pools/web/replicas", { token: TOKENS.scale, body: { replicas: 3 } });
    assert.equal(scaled.status, 202, JSON.stringify(scaled.body));
    assert.equal((await settled(svc, scaled.body.operation.id)).status, "succeeded");
    await waitFor("3 healthy", async () => (await reads.pool("web")).healthy === 3, 30_000);
    const original = await reads.urls();

    const sampler = samplePool(svc, "web", {
        check: (p) => assert.equal(p.desired, 3, "a rotation's surge is not a new desired count"),
    });
    let samples: { healthy: number[]; actual: number[] } = { healthy: [], actual: [] };
    try {
        const rotating = await waitFor(
            "web-0's rotation draining on the lease",
            async () =>
                (await reads.rotateOps()).find((o) =>
                    o.drain?.members?.some((m: any) => m.member === "web-0" && m.state === "waiting"),
                ),
            2 * PERIOD_S * 1000 + 60_000,
            250,
        );
        assert.deepEqual(rotating.members, ["web-0"], "the first round saw web-0 due, alone");
        // web-1 and web-2 come due while the lease holds the rotation (each at most PERIOD_S after its creation).
        await sleep(PERIOD_S * 1000);
        const released = await svc.call("POST", `/v1/leases/${lease.body.lease.id}/release`, {
            token: TOKENS.lease,
            body: { outcome: "ok" },
        });
        assert.equal(released.status, 200);
        const op = await settled(svc, rotating.id, 180_000);
        assert.equal(op.status, "succeeded", JSON.stringify(op));
        const byMember = new Map((op.rotations as any[]).map((r) => [r.member, r]));
        assert.deepEqual([...byMember.keys()].sort(), ["web-0", "web-1", "web-2"], "one operation replaced all three");
        for (const r of byMember.values()) assert.ok(r.replacedAt, `${r.member} replaced: ${JSON.stringify(r)}`);
        assert.equal(byMember.get("web-0").surge, "web-3");
        assert.deepEqual(
            [byMember.get("web-1").surge, byMember.get("web-2").surge].sort(),
            ["web-3", "web-4"],
            "the later batch of two stood behind two surge members",
        );
        assert.ok(
            svc.logs.some((l) => l.includes("the surge grew")),
            "the growth is logged",
        );
        const now = await waitFor("the pool back at 3 members", async () => {
            const u = await reads.urls();
            return u.size === 3 && u;
        });
        for (const id of original.keys()) assert.notEqual(now.get(id), original.get(id), `${id} was replaced`);
    } finally {
        samples = await sampler.stop();
    }
    assert.ok(Math.min(...samples.healthy) >= 3, `healthy never below 3: ${samples.healthy.join(" ")}`);
    assert.ok(Math.max(...samples.actual) <= 5, `at most replicas + maxSurge members: ${samples.actual.join(" ")}`);
    assert.ok(samples.actual.includes(5), `the surge grew to 2: ${samples.actual.join(" ")}`);
});
