/** Rotation by age as pure functions: deadlines with a stable jitter, at most maxSurge, and no rotation while capacity is short. */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
    decideRotations,
    dueAtOf,
    JITTER,
    jitterOf,
    type RotateInput,
    type RotateMemberFacts,
} from "../../src/service/control/rotate/decide";
import { memberCreatedAt } from "../../src/engine/member-urns";

const NOW = 1_000_000_000_000;
const HOUR = 3_600_000;
const member = (
    id: string,
    createdAt: number | undefined,
    over: Partial<RotateMemberFacts> = {},
): RotateMemberFacts => ({
    id,
    pool: id.split("-")[0],
    index: Number(id.split("-")[1]),
    createdAt,
    health: "healthy",
    ...over,
});
const input = (members: RotateMemberFacts[], over: Partial<RotateInput["pools"]["web"]> = {}): RotateInput => ({
    now: NOW,
    members,
    pools: { web: { rotateAfterSeconds: 3600, maxSurge: 1, replicas: 3, maxReplicas: 10, ...over } },
});

test("the jitter brings a deadline forward by up to 10%, never later, the same for the same member generation, and new for its replacement", () => {
    const seen = new Set<number>();
    for (let i = 0; i < 500; i++) {
        const j = jitterOf(`web-${i}`, NOW);
        assert.ok(j > -JITTER && j <= 0, String(j));
        seen.add(Math.round(j * 100));
    }
    assert.ok(seen.size > 8, "the jitter spreads members over the range");
    assert.equal(jitterOf("web-0", NOW), jitterOf("web-0", NOW));
    assert.notEqual(jitterOf("web-0", NOW), jitterOf("web-0", NOW + 1));
    const due = dueAtOf("web-0", NOW, 3600);
    assert.ok(
        due - NOW <= HOUR && due - NOW > HOUR * (1 - JITTER),
        "due within the last 10% of its age, never after it",
    );
});

test("members past their deadline rotate, oldest deadline first, at most maxSurge", () => {
    const old = NOW - 2 * HOUR;
    const members = [member("web-0", old + 1000), member("web-1", old), member("web-2", NOW - 60_000)];
    const [plan] = decideRotations(input(members));
    assert.deepEqual(
        plan.rotate.map((d) => d.member),
        [dueAtOf("web-1", old, 3600) <= dueAtOf("web-0", old + 1000, 3600) ? "web-1" : "web-0"],
    );
    assert.equal(plan.holding, undefined);
    const [two] = decideRotations(input(members, { maxSurge: 2 }));
    assert.deepEqual(two.rotate.map((d) => d.member).sort(), ["web-0", "web-1"]);
    assert.equal(
        two.nextDueAt,
        Math.min(...[members[0], members[1], members[2]].map((m) => dueAtOf(m.id, m.createdAt!, 3600))),
    );
    assert.equal(two.rotate[0].dueAt, two.nextDueAt);
});

test("nothing is due: no rotation, and the next deadline is told", () => {
    const members = [0, 1, 2].map((i) => member(`web-${i}`, NOW - 60_000 * (i + 1)));
    const [plan] = decideRotations(input(members));
    assert.deepEqual(plan.rotate, []);
    assert.equal(plan.holding, undefined);
    assert.equal(plan.nextDueAt, Math.min(...members.map((m) => dueAtOf(m.id, m.createdAt!, 3600))));
});

test("capacity short or unknown holds every rotation, saying why", () => {
    const old = NOW - 2 * HOUR;
    const whole = [0, 1, 2].map((i) => member(`web-${i}`, old));
    const hold = (members: RotateMemberFacts[], over = {}) => decideRotations(input(members, over))[0];
    const unhealthy = hold([whole[0], { ...whole[1], health: "unhealthy" }, { ...whole[2], health: "unknown" }]);
    assert.deepEqual(unhealthy.rotate, []);
    assert.equal(unhealthy.holding, "web-1, web-2 are not healthy; rotation waits so capacity never drops below 3");
    const missing = hold(whole.slice(0, 2));
    assert.equal(missing.holding, "2 of 3 members exist; rotation waits for the pool to be whole");
    const undated = hold([whole[0], whole[1], member("web-2", undefined)]);
    assert.equal(undated.holding, "state has no creation time for some members (older engine); their age is unknown");
    const full = hold(whole, { maxReplicas: 3 });
    assert.equal(full.holding, "no room for a surge member: replicas (3) is already maxReplicas");
});

test("surge members of an unfinished rotation (index ≥ replicas) are neither rotated nor counted", () => {
    const old = NOW - 2 * HOUR;
    const members = [0, 1, 2]
        .map((i) => member(`web-${i}`, NOW - 1000))
        .concat(member("web-3", old, { health: "unhealthy" }));
    const [plan] = decideRotations(input(members));
    assert.deepEqual(plan.rotate, []);
    assert.equal(plan.holding, undefined);
    assert.ok(plan.nextDueAt! > NOW);
});

test("member age from state: the oldest created stamp of its custom resources; unstamped members left out", () => {
    const pool = "urn:pulumi:dev::egress::egress:index:ProxyPool::web";
    const comp = (n: string) => ({
        urn: `urn:pulumi:dev::egress::egress:index:ProxyPool$egress:local:Proxy::${n}`,
        type: "egress:local:Proxy",
        parent: pool,
    });
    const child = (n: string, suffix: string, created?: string) => ({
        urn: `urn:pulumi:dev::egress::egress:index:ProxyPool$egress:local:Proxy$egress:local:Process::${n}-${suffix}`,
        type: "egress:local:Process",
        parent: comp(n).urn,
        custom: true,
        id: `${n}-${suffix}`,
        ...(created ? { created } : {}),
    });
    const resources = [
        { urn: pool, type: "egress:index:ProxyPool" },
        comp("web-0"),
        child("web-0", "a", "2026-12-01T10:00:05Z"),
        child("web-0", "b", "2026-12-01T10:00:01Z"),
        comp("web-1"),
        child("web-1", "a"),
    ];
    const ages = memberCreatedAt(resources);
    assert.deepEqual([...ages], [["web-0", Date.parse("2026-12-01T10:00:01Z")]]);
});
