/**
 * The autoscale loop (control/autoscale/autoscaler.ts) between the fleet's signals and the scaler: what it
 * samples, when it decides, what it hands the scaler. The scaler here is a stand-in for its queue (the
 * engine side is test/service/autoscale.test.ts).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import pino from "pino";
import { Autoscaler } from "../../src/service/control/autoscale/autoscaler";
import type { Scaler } from "../../src/service/control/scaler";
import type { AutoscaleRecord, Operation } from "../../src/state/operations/operation";
import type { PoolConfig } from "../../src/model";

function rig(over: { replicas?: number; min?: number } = {}) {
    let now = 1_000_000;
    const asked: { pool: string; to: number; why: AutoscaleRecord }[] = [];
    const queue = { busy: false, accepts: true, desired: undefined as number | undefined };
    const scaler = {
        accepts: () => queue.accepts,
        busy: () => queue.busy,
        desired: () => queue.desired,
        autoscale(pool: string, to: number, why: AutoscaleRecord) {
            asked.push({ pool, to, why });
            queue.desired = to;
            return { id: `op_${asked.length}`, autoscale: { [pool]: why } } as unknown as Operation;
        },
    } as unknown as Scaler;
    const pool = {
        name: "web",
        replicas: over.replicas ?? 1,
        autoscale: {
            min: over.min ?? 1,
            max: 6,
            targetUtilization: 0.5,
            scaleDownAfterSeconds: 10,
            cooldownSeconds: 5,
        },
    } as PoolConfig;
    const counts: Record<string, { healthy: number; leased: number; unknown: number; actual?: number }> = {
        web: { healthy: 1, leased: 0, unknown: 0 },
    };
    const a = new Autoscaler({
        intervalMs: 1000,
        windowMs: 2000,
        log: pino({ level: "silent" }),
        scaler,
        pools: () => [pool, { ...pool, name: "fixed", autoscale: undefined }],
        counts: () => counts,
        now: () => now,
    });
    const tick = (n = 1) => {
        for (let i = 0; i < n; i++) {
            now += 1000;
            a.runOnce();
        }
    };
    return { a, asked, queue, counts, tick, pool };
}

test("refusals between samples count as demand; one decision after a window above target", () => {
    const r = rig();
    r.tick();
    r.counts.web.leased = 1;
    for (let s = 0; s < 3; s++) {
        for (let i = 0; i < 4; i++) r.a.refusal("web", i % 2 ? "gateway" : "lease");
        r.a.refusal("fixed", "lease"); // not autoscaled: ignored
        r.tick();
    }
    assert.equal(r.asked.length, 1);
    assert.equal(r.asked[0].to, 6);
    assert.equal(r.asked[0].why.from, 1);
    assert.deepEqual(
        [r.asked[0].why.signals.refusedLeases, r.asked[0].why.signals.refusedGateway, r.asked[0].why.signals.samples],
        [4, 4, 2],
    );
    assert.equal(r.a.view("web")?.lastDecision?.operation, "op_1");
    assert.equal(r.a.view("fixed"), undefined);
});

test("no decision while an operation runs or waits, or while this replica does not lead", () => {
    const r = rig();
    r.counts.web.leased = 1;
    r.queue.busy = true;
    r.tick(5);
    r.queue.busy = false;
    r.queue.accepts = false;
    r.tick(5);
    assert.equal(r.asked.length, 0);
    r.queue.accepts = true;
    r.tick();
    assert.equal(r.asked.length, 0, "the window's wait starts when it may decide");
    r.tick(2);
    assert.equal(r.asked.length, 1);
});

test("members not probed yet hold the pool; an empty pool wakes on its first refusal, at once", () => {
    const r = rig();
    r.counts.web = { healthy: 1, leased: 1, unknown: 1 };
    r.tick(5);
    assert.equal(r.asked.length, 0);
    assert.match(r.a.view("web")?.signals?.holding ?? "", /not probed yet/);

    const z = rig({ replicas: 0, min: 0 });
    z.counts.web = { healthy: 0, leased: 0, unknown: 0 };
    z.tick();
    z.a.refusal("web", "lease");
    assert.equal(z.asked.length, 1, "before the next round");
    assert.equal(z.asked[0].to, 2, "one refused request at target 0.5");
    z.a.refusal("web", "lease");
    assert.equal(z.asked.length, 1, "the pool is heading to 2 now: no second wake-up");
});

test("a settled operation starts the cooldown over and empties the window", () => {
    const r = rig();
    r.counts.web.leased = 1;
    r.tick(3);
    assert.equal(r.asked.length, 1);
    r.a.settled({ autoscale: { web: r.asked[0].why } } as unknown as Operation);
    // Say the operation left 2 members, both leased: above target, wanting 4.
    r.counts.web = { healthy: 2, leased: 2, unknown: 0 };
    r.queue.desired = 2;
    r.tick(4);
    assert.equal(r.asked.length, 1, "cooldown (5 s) counts from the settle, not from the decision");
    assert.match(r.a.view("web")?.signals?.holding ?? "", /cooling down for 1s/);
    r.tick();
    assert.equal(r.asked.length, 2);
    assert.equal(r.asked[1].to, 4);
    assert.equal(r.asked[1].why.signals.samples, 2, "the window started over at the settle: 2 s of samples");
});

test("after a failed decision the pool is sized from its members, so the next decision (after the cooldown) asks again", () => {
    const r = rig({ replicas: 2 });
    r.counts.web = { healthy: 2, leased: 2, unknown: 0, actual: 2 };
    r.tick(3);
    assert.equal(r.asked.length, 1);
    assert.equal(r.asked[0].to, 4);
    // The operation failed: the stack file says 4 (the scaler wrote it), 2 members exist, nothing queued.
    r.queue.desired = undefined;
    r.pool.replicas = 4;
    r.a.settled({ status: "failed", autoscale: { web: r.asked[0].why } } as unknown as Operation);
    r.tick(6);
    assert.equal(r.asked.length, 2, "asked again once the cooldown from the failure passed");
    assert.equal(r.asked[1].to, 4);
    assert.equal(r.asked[1].why.signals.samples > 0, true);
});
