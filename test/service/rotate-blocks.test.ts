/**
 * Rotation by blocks on the real engine with real local proxies: in a pool of 3, releases with outcome
 * `blocked` for one member past its ratio rotate it (a `rotate` operation, reason `blocked`, the member
 * replaced behind a surge member, never fewer than 3 healthy); in a pool where every member is blocked,
 * GET /v1/pools reports a pool-wide block, nothing is replaced, and the block clears with its window.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { samplePool, TestService, TOKENS } from "../helpers/service";
import { rotationReads, startRotatingService } from "../helpers/rotation";
import { sleep, waitFor } from "../helpers/harness";

const pool = (name: string, rotateOnBlocks: object) => ({
    name,
    provider: "local",
    replicas: 3,
    maxReplicas: 6,
    drainSeconds: 5,
    rotateOnBlocks,
});
let svc: TestService;
let reads: ReturnType<typeof rotationReads>;
before(async () => {
    svc = await startRotatingService([
        pool("web", { ratio: 0.5, minOutcomes: 4, windowSeconds: 600 }),
        pool("wall", { ratio: 0.5, minOutcomes: 2, windowSeconds: 8 }),
    ]);
    reads = rotationReads(svc);
    for (const name of ["web", "wall"])
        await waitFor(`3 healthy in ${name}`, async () => (await reads.pool(name)).healthy === 3, 30_000);
});
after(async () => {
    await svc?.close();
});

/** One lease of `pool` released with the outcome `outcomeOf` picks for its member; returns the member. */
async function leaseAndRelease(name: string, outcomeOf: (member: string) => string): Promise<string> {
    const lease = await svc.call("POST", "/v1/leases", { token: TOKENS.lease, body: { pool: name } });
    assert.equal(lease.status, 201, JSON.stringify(lease.body));
    const member = lease.body.lease.proxy.id as string;
    const released = await svc.call("POST", `/v1/leases/${lease.body.lease.id}/release`, {
        token: TOKENS.lease,
        body: { outcome: outcomeOf(member) },
    });
    assert.equal(released.status, 200, JSON.stringify(released.body));
    return member;
}

const opsOf = async (name: string) => (await reads.rotateOps()).filter((o) => o.rotations?.[0]?.pool === name);

test("every member of a pool blocked: a pool-wide block is reported, nothing is replaced, and it clears with the window", async () => {
    const before = await reads.urls("wall");
    const blocks = new Map<string, number>();
    for (let i = 0; i < 40 && !(blocks.size === 3 && [...blocks.values()].every((n) => n >= 2)); i++) {
        const m = await leaseAndRelease("wall", () => "blocked");
        blocks.set(m, (blocks.get(m) ?? 0) + 1);
    }
    assert.equal(blocks.size, 3, `every member got blocks: ${JSON.stringify([...blocks])}`);
    // A round between the leases may see 2 of 3 tripped first: already more than half, so the block starts
    // then, and names the third member once it trips too (the same block, its `since` kept).
    const wide = await waitFor(
        "a pool-wide block on wall naming its 3 members",
        async () => {
            const block = (await reads.pool("wall")).rotation?.poolWideBlock;
            return block?.members.length === 3 ? block : undefined;
        },
        10_000,
        200,
    );
    assert.deepEqual(wide.members, ["wall-0", "wall-1", "wall-2"]);
    assert.match(wide.detail, /^3 of 3 members tripped rotateOnBlocks at once \(more than half\)/);
    assert.ok(Date.parse(wide.since) > 0, "since is an ISO time");
    assert.ok(
        svc.logs.some((l) => l.includes("pool-wide block on pool wall")),
        "a warn line says the pool is blocked as a whole",
    );
    const metrics = await reads.metrics();
    assert.match(metrics, /egress_rotation_pool_wide_blocks_total\{pool="wall"\} 1\b/);
    // Several rounds (every 500 ms) while it lasts: none queues a rotation.
    await sleep(3000);
    assert.deepEqual(await opsOf("wall"), [], "no rotation of a pool-wide blocked pool");
    assert.equal((await reads.pool("wall")).rotation.poolWideBlock.since, wide.since, "one block, still on");
    // The window is 8 s: once the blocks age out of it, the block clears by itself.
    await waitFor(
        "the pool-wide block to clear",
        async () => !(await reads.pool("wall")).rotation.poolWideBlock,
        20_000,
        250,
    );
    assert.deepEqual(await opsOf("wall"), [], "still nothing replaced");
    assert.deepEqual(await reads.urls("wall"), before, "the members still run their first processes");
    assert.match(await reads.metrics(), /egress_rotation_pool_wide_blocks_total\{pool="wall"\} 1\b/);
});

test("one member blocked past the ratio in a pool of 3 is rotated (reason blocked), healthy never below 3", async () => {
    const original = await reads.urls("web");
    assert.equal(original.size, 3);
    const view = (await reads.pool("web")).rotation;
    assert.deepEqual(view.rotateOnBlocks, { ratio: 0.5, minOutcomes: 4, windowSeconds: 600 });
    assert.equal(view.rotateAfterSeconds, undefined, "no rotation by age");
    assert.equal(view.ipMemorySeconds, 3600, "the default");

    const sampler = samplePool(svc, "web", { check: (p) => assert.equal(p.desired, 3) });
    let samples: number[] = [];
    let sizes: number[] = [];
    let target: string | undefined;
    try {
        // The first member leased is the one the site blocks; the others' leases end fine.
        let blocked = 0;
        for (let i = 0; i < 40 && blocked < 4; i++)
            await leaseAndRelease("web", (m) => {
                target ??= m;
                if (m !== target) return "ok";
                blocked++;
                return "blocked";
            });
        assert.equal(blocked, 4, "the target got its 4 blocked outcomes");
        const op = await waitFor(
            `a rotation of ${target} that succeeded`,
            async () => (await opsOf("web")).find((o) => o.status === "succeeded" || o.status === "failed"),
            120_000,
            250,
        );
        assert.equal(op.status, "succeeded", op.error);
        assert.deepEqual(op.members, [target]);
        assert.equal(op.reasons[target!].reason, "blocked");
        assert.equal(op.reasons[target!].detail, "4 of 4 outcomes blocked in the last 600 s (ratio 0.5)");
        const [r] = op.rotations;
        assert.equal(r.reason, "blocked");
        assert.equal(r.detail, "4 of 4 outcomes blocked in the last 600 s (ratio 0.5)");
        assert.equal(r.dueAt, undefined, "no deadline: not by age");
        assert.match(r.surge, /^web-3$/);
        assert.ok(r.replacedAt, "its replacement passed its health check");
        assert.equal(r.reusedIp, true, "a local member never brings a new exit IP: flagged");
        const now = await waitFor("web back at 3 members", async () => {
            const u = await reads.urls("web");
            return u.size === 3 && u;
        });
        assert.notEqual(now.get(target!), original.get(target!), `${target} runs a new process`);
        for (const [id, url] of original) if (id !== target) assert.equal(now.get(id), url, `${id} was left alone`);
        // Its outcomes start afresh under the same name: no second rotation for the old blocks.
        await sleep(3000);
        assert.equal((await opsOf("web")).length, 1, "rotated once");
    } finally {
        ({ healthy: samples, actual: sizes } = await sampler.stop());
    }
    assert.ok(samples.length > 10, `sampled ${samples.length} times`);
    assert.ok(Math.min(...samples) >= 3, `healthy never below 3: ${samples.join(" ")}`);
    assert.ok(Math.max(...sizes) <= 4, `at most replicas + maxSurge members: ${sizes.join(" ")}`);
    const p = await reads.pool("web");
    assert.equal(p.rotation.poolWideBlock, undefined);
    assert.equal(p.rotation.lastRotation.rotations[0].reason, "blocked");
    const metrics = await reads.metrics();
    assert.match(metrics, /egress_rotations_total\{pool="web",reason="blocked"\} 1\b/);
});
