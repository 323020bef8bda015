/**
 * The memory lease manager held to the brute-force model of the lease rules (test/helpers/lease-model.ts):
 * 10,000 interleaved acquire / release / clock / health / membership operations per seed, sticky sessions
 * with their idle TTLs included. The Redis store runs the same walk in test/service/leases-property-redis.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { LeaseManager } from "../../src/service/leases";
import { MODEL_TARGET_COOLDOWN_SECONDS, walkLeases, type LeaseSubject } from "../helpers/lease-model";

/** The manager as the walk drives it: its clock is the walk's, its state read from snapshot(). */
function memorySubject(): LeaseSubject {
    let now = 0;
    let leaseNo = 0;
    const mgr = new LeaseManager({
        now: () => now,
        newLeaseId: () => `L${++leaseNo}`,
        sessionTtlSeconds: 8,
        targetCooldownSeconds: MODEL_TARGET_COOLDOWN_SECONDS, // the model's rest after ok/error (the default is 0)
    });
    return {
        setNow: (ms) => void (now = ms),
        setMembers: (members, pools) => mgr.setMembers(members, pools),
        setEligible: (id, eligible) => void mgr.setEligible(id, eligible),
        acquire: (req) => mgr.acquire(req),
        release: (id, outcome) => mgr.release(id, outcome),
        sweep: () => void mgr.sweep(),
        liveLeaseIds: () => {
            const ids = mgr
                .snapshot()
                .filter((s) => s.state === "leased")
                .map((s) => s.leaseId!);
            assert.equal(mgr.activeLeases, ids.length);
            return ids;
        },
        eligibility: () =>
            new Map(mgr.snapshot().flatMap((s) => (s.state === "leased" ? [] : [[s.id, s.state !== "ineligible"]]))),
        sessionMember: (session, pool) => mgr.sessionMember(session, pool),
    };
}

for (const seed of [1, 42, 20240611]) {
    test(`10,000 random operations agree with the brute-force model (seed ${seed})`, async () => {
        const { granted, sessionsUsed, stuck } = await walkLeases(memorySubject(), seed, 10_000, {
            sessionTtl: { a: 4, b: 15, c: 8 },
            ties: "joined",
        });
        assert.ok(granted > 1000, `only ${granted} leases granted: the mix is not exercising contention`);
        // Both branches of a session acquire are exercised: sticking, and moving or starting anew.
        assert.ok(stuck > 100 && sessionsUsed - stuck > 100, `sessions: ${stuck} stuck of ${sessionsUsed}`);
    });
}
