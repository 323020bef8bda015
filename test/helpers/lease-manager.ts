/**
 * A LeaseManager on a fake clock with predictable lease ids (L1, L2, …), for the unit tests of its
 * semantics (test/unit/leases*.test.ts): `setup` makes one with members leasable at once and a 30 s rest
 * after ok/error; `take` and `refused` acquire and assert the answer's kind.
 */
import assert from "node:assert/strict";
import { AcquireRequest, Lease, LeaseManager, LeaseManagerOptions } from "../../src/service/leases";

export const T0 = 1_000_000_000;

export function setup(
    opts: LeaseManagerOptions = {},
    pools: Record<string, { cooldownSeconds: number; sessionTtlSeconds?: number }> = { web: { cooldownSeconds: 0 } },
    ids = ["web-0", "web-1", "web-2"],
) {
    const clock = { t: T0 };
    let n = 0;
    // A 30 s rest after ok/error (not the default, 0): these tests are about what the rest does.
    const m = new LeaseManager({
        now: () => clock.t,
        newLeaseId: () => `L${++n}`,
        initiallyEligible: true,
        targetCooldownSeconds: 30,
        ...opts,
    });
    m.setMembers(
        ids.map((id) => ({ id, pool: id.replace(/-\d+$/, "") })),
        pools,
    );
    return { m, clock, advance: (ms: number) => (clock.t += ms) };
}

export function take(m: LeaseManager, req: AcquireRequest = {}): Lease {
    const r = m.acquire(req);
    assert.ok(r.ok, `expected a lease, got ${JSON.stringify(r)}`);
    return r.lease;
}

export function refused(m: LeaseManager, req: AcquireRequest = {}) {
    const r = m.acquire(req);
    assert.ok(!r.ok, `expected no lease, got ${JSON.stringify(r)}`);
    return r;
}
