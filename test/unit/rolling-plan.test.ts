/** Rolling changes as pure functions: batches from maxSurge/maxUnavailable/room, and which members a preview's replace steps mean. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { membersOfUrns, siblingUrns, targetedMembers } from "../../src/engine/member-urns";
import { planRollouts, type RollingPolicy } from "../../src/fleet-ops/rolling/plan";

const policy = (over: Partial<RollingPolicy> = {}): RollingPolicy => ({
    replicas: 4,
    maxReplicas: 10,
    maxSurge: 1,
    maxUnavailable: 0,
    ...over,
});

test("defaults (maxSurge 1, maxUnavailable 0): one surge member, one member per batch, in index order", () => {
    assert.deepEqual(planRollouts(["web-3", "web-0", "web-2", "web-1"], { web: policy() }), [
        { pool: "web", replicas: 4, surge: 1, batches: [["web-0"], ["web-1"], ["web-2"], ["web-3"]] },
    ]);
});

test("a batch is maxSurge + maxUnavailable members; the surge is at most the members replaced", () => {
    const ids = ["web-0", "web-1", "web-2", "web-3", "web-4"];
    const [r] = planRollouts(ids, { web: policy({ replicas: 5, maxSurge: 2, maxUnavailable: 1 }) });
    assert.equal(r.surge, 2);
    assert.deepEqual(r.batches, [
        ["web-0", "web-1", "web-2"],
        ["web-3", "web-4"],
    ]);
    const [one] = planRollouts(["web-2"], { web: policy({ maxSurge: 3 }) });
    assert.deepEqual([one.surge, one.batches], [1, [["web-2"]]]);
});

test("maxSurge 0 with maxUnavailable: no surge, members go out of service maxUnavailable at a time", () => {
    const [r] = planRollouts(["web-0", "web-1", "web-2"], { web: policy({ maxSurge: 0, maxUnavailable: 2 }) });
    assert.deepEqual([r.surge, r.batches], [0, [["web-0", "web-1"], ["web-2"]]]);
});

test("the surge fits under maxReplicas; a pool with no room and maxUnavailable 0 is refused naming the ways out", () => {
    const [r] = planRollouts(["web-0", "web-1"], { web: policy({ replicas: 4, maxReplicas: 5, maxSurge: 3 }) });
    assert.equal(r.surge, 1);
    assert.throws(
        () => planRollouts(["web-0"], { web: policy({ replicas: 4, maxReplicas: 4 }) }),
        /pool web cannot roll its change: it is at maxReplicas \(4\) and maxUnavailable is 0; raise maxReplicas or maxUnavailable, or apply it with `egress up --all-at-once`/,
    );
    const [u] = planRollouts(["web-0"], { web: policy({ replicas: 4, maxReplicas: 4, maxUnavailable: 1 }) });
    assert.deepEqual([u.surge, u.batches], [0, [["web-0"]]]);
});

test("pools roll separately, each with its own budget; members above the count (being removed) and unknown ids are left out", () => {
    const out = planRollouts(["api-1", "web-0", "web-7", "web-a-0", "other-0"], {
        web: policy({ replicas: 2 }),
        "web-a": policy({ replicas: 1, maxSurge: 2 }),
        api: policy({ replicas: 2 }),
    });
    assert.deepEqual(out, [
        { pool: "api", replicas: 2, surge: 1, batches: [["api-1"]] },
        { pool: "web", replicas: 2, surge: 1, batches: [["web-0"]] },
        { pool: "web-a", replicas: 1, surge: 1, batches: [["web-a-0"]] },
    ]);
    assert.deepEqual(planRollouts([], { web: policy() }), []);
});

const poolUrn = "urn:pulumi:dev::egress::egress:index:ProxyPool::web";
const comp = (n: string) => ({
    urn: `urn:pulumi:dev::egress::egress:index:ProxyPool$egress:local:Proxy::${n}`,
    type: "egress:local:Proxy",
    parent: poolUrn,
});
const child = (n: string) => ({
    urn: `urn:pulumi:dev::egress::egress:index:ProxyPool$egress:local:Proxy$egress:local:Process::${n}-p`,
    type: "egress:local:Process",
    parent: comp(n).urn,
    custom: true,
    id: `${n}-p`,
});

test("a preview's replaced URNs map to their members, each once and sorted; the pool's own URN and new ones to none", () => {
    const resources = [
        { urn: poolUrn, type: "egress:index:ProxyPool" },
        comp("web-0"),
        child("web-0"),
        comp("web-1"),
        child("web-1"),
    ];
    assert.deepEqual(
        membersOfUrns(resources, [
            child("web-1").urn,
            child("web-0").urn,
            child("web-1").urn,
            poolUrn,
            child("web-9").urn,
        ]),
        ["web-0", "web-1"],
    );
    assert.deepEqual(membersOfUrns(resources, [comp("web-1").urn]), ["web-1"]);
    assert.deepEqual(membersOfUrns([...resources, { ...child("web-0"), delete: true }], []), []);
});

test("surge members' component URNs follow a sibling's parent chain", () => {
    assert.deepEqual(siblingUrns(comp("web-0").urn, ["web-4", "web-5"]), [comp("web-4").urn, comp("web-5").urn]);
});

test("a targeted up's members: every target a member component, else none (the program then registers all)", () => {
    assert.deepEqual([...targetedMembers([comp("web-0").urn, comp("web-7").urn])!], ["web-0", "web-7"]);
    assert.equal(targetedMembers([comp("web-0").urn, child("web-0").urn]), undefined, "a member's child");
    assert.equal(targetedMembers([comp("web-0").urn, poolUrn]), undefined, "the pool itself");
    assert.equal(targetedMembers(["urn:pulumi:dev::egress::pulumi-nodejs:dynamic/x::installation"]), undefined);
    assert.equal(targetedMembers([]), undefined);
});
