/**
 * Fleet's zone check (src/service/fleet/fleet.ts): a zone no member of the pool ever had is a 400-class
 * `unknown-zone` naming the zones; a zone whose last member went (scaled down, removed) stays known, so a
 * request for it is a plain refusal with Retry-After (503), not a "typo" answer.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { LeaseManager } from "../../src/service/leases";
import { Fleet, HealthSource } from "../../src/service/fleet/fleet";
import { immediate } from "../../src/service/store/types";
import type { PoolConfig, ProxyMember } from "../../src/model";

const member = (i: number, zone: string): ProxyMember => ({
    id: `web-${i}`,
    pool: "web",
    provider: "racks",
    kind: "static",
    index: i,
    host: "127.0.0.1",
    port: 4000 + i,
    url: `http://127.0.0.1:${4000 + i}`,
    zone,
});
const POOLS = [{ name: "web", cooldownSeconds: 0, sessionTtlSeconds: 600 } as PoolConfig];

test("a zone whose last member went is refused as empty (503), one never seen as unknown (400)", () => {
    const healthy: HealthSource = { setMembers() {}, get: () => ({ state: "healthy" }) };
    const fleet = new Fleet(new LeaseManager({ targetCooldownSeconds: 0 }), healthy);
    fleet.sync([member(0, "rack-1"), member(1, "rack-2")], POOLS);
    const got = immediate(fleet.acquire({ pool: "web", zone: "rack-2" }));
    assert.ok(got.ok && got.lease.proxy.id === "web-1", JSON.stringify(got));

    fleet.sync([member(0, "rack-1")], POOLS); // rack-2's member is gone
    const empty = immediate(fleet.acquire({ pool: "web", zone: "rack-2" }));
    assert.ok(!empty.ok, JSON.stringify(empty));
    assert.equal(empty.reason, "none-available");
    assert.ok(empty.retryAfterSeconds >= 1, "a Retry-After for the empty zone");

    const typo = immediate(fleet.acquire({ pool: "web", zone: "rack-9" }));
    assert.ok(!typo.ok && typo.reason === "unknown-zone", JSON.stringify(typo));
    assert.match((typo as { message: string }).message, /zone "rack-9".*zones: rack-1, rack-2/);

    const other = immediate(fleet.acquire({ pool: "web", zone: "rack-1" }));
    assert.ok(other.ok && other.lease.proxy.id === "web-0", "the other zone still leases");
});
