/**
 * The fleet's outcome hook (Fleet.onOutcome) with the memory store: every successful release tells its
 * member's outcome, a block reported after the lease (POST /v1/blocks) is one more `blocked`, and a
 * release of an unknown lease or a block for an unknown member tells nothing. The rotator's outcome
 * window is what listens (start/parts.ts); with Redis the store counts instead (cluster-verdicts.test.ts).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { LeaseManager } from "../../src/service/leases";
import { Fleet, HealthSource } from "../../src/service/fleet/fleet";
import { immediate } from "../../src/service/store/types";
import { OutcomeWindow } from "../../src/service/control/rotate/outcome-window";
import type { PoolConfig, ProxyMember } from "../../src/model";

const member: ProxyMember = {
    id: "web-0",
    pool: "web",
    provider: "local",
    kind: "local",
    index: 0,
    host: "127.0.0.1",
    port: 4000,
    url: "http://127.0.0.1:4000",
    zone: "local",
};

test("releases and reported blocks reach the outcome window; unknown leases and members do not", () => {
    const healthy: HealthSource = { setMembers() {}, get: () => ({ state: "healthy" }) };
    const fleet = new Fleet(new LeaseManager({ targetCooldownSeconds: 0 }), healthy);
    fleet.sync([member], [{ name: "web", cooldownSeconds: 0, sessionTtlSeconds: 600 } as PoolConfig]);
    const window = new OutcomeWindow(60_000);
    const told: string[] = [];
    fleet.onOutcome((m, o) => (told.push(`${m}:${o}`), window.record(m, o)));
    for (const outcome of ["blocked", "ok", "error"] as const) {
        const got = immediate(fleet.acquire({ pool: "web" }));
        assert.ok(got.ok, JSON.stringify(got));
        assert.ok(immediate(fleet.release(got.lease.id, outcome)).ok);
    }
    assert.ok(immediate(fleet.reportBlocked("web-0", "example.com")) !== undefined);
    assert.equal(immediate(fleet.reportBlocked("web-9", "example.com")), undefined);
    assert.equal(immediate(fleet.release("no-such-lease", "blocked")).ok, false);
    assert.deepEqual(told, ["web-0:blocked", "web-0:ok", "web-0:error", "web-0:blocked"]);
    assert.deepEqual(window.counts("web-0", 60), { blocked: 2, total: 4 });
});
