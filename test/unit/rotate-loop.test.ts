/**
 * The rotation loop (control/rotate/rotator.ts) between the fleet and the scaler: it decides only while the
 * scaler accepts requests (leading, recovered) and is idle, reads ages once per fleet change, hands the
 * scaler one pool's due members, and asks again for members that came due while a rotation runs. The
 * scaler is a stand-in (the engine side is test/service/rotate.test.ts).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import pino from "pino";
import { Rotator } from "../../src/service/control/rotate/rotator";
import { dueAtOf } from "../../src/service/control/rotate/decide";
import { countsToRestore, type MoreDue } from "../../src/service/control/rotate/run";
import type { Scaler } from "../../src/service/control/scaler";
import type { Operation, RotationRecord } from "../../src/state/operations/operation";
import type { PoolConfig, ProxyMember } from "../../src/model";

const T0 = 1_000_000_000_000;

function rig(over: Partial<PoolConfig> = {}) {
    let now = T0;
    const asked: { records: RotationRecord[]; more?: MoreDue }[] = [];
    const queue = { busy: false, accepts: true };
    let reads = 0;
    const scaler = {
        accepts: () => queue.accepts,
        busy: () => queue.busy,
        desired: () => undefined,
        rotate(records: RotationRecord[], more?: MoreDue) {
            asked.push({ records, more });
            return { id: `op_${asked.length}`, members: records.map((r) => r.member) } as unknown as Operation;
        },
    } as unknown as Scaler;
    const pool = {
        name: "web",
        replicas: 3,
        maxReplicas: 6,
        maxSurge: 1,
        rotateAfterSeconds: 60,
        ipMemorySeconds: 3600,
        ...over,
    } as PoolConfig;
    const logged: string[] = [];
    const wideBlocks: string[] = [];
    const reusedIps: string[] = [];
    const created = new Map([
        ["web-0", T0],
        ["web-1", T0 + 10_000],
        ["web-2", T0 + 20_000],
    ]);
    const members = [0, 1, 2].map(
        (i) =>
            ({
                id: `web-${i}`,
                pool: "web",
                index: i,
                host: "127.0.0.1",
                url: `http://127.0.0.1:${i + 1}`,
            }) as ProxyMember,
    );
    const rotated: string[] = [];
    const r = new Rotator({
        intervalMs: 1000,
        log: pino({ level: "info" }, { write: (line: string) => void logged.push(JSON.parse(line).msg) }),
        scaler,
        members: () => members,
        health: () => ({ state: "healthy" }) as never,
        pools: () => [pool, { ...pool, name: "still", rotateAfterSeconds: undefined }],
        createdAt: async () => {
            reads++;
            return created;
        },
        onRotate: (p, reason) => rotated.push(reason === "age" ? p : `${p}:${reason}`),
        onPoolWideBlock: (p) => wideBlocks.push(p),
        onReusedIp: (p) => reusedIps.push(p),
        now: () => now,
    });
    return {
        r,
        asked,
        queue,
        created,
        members,
        rotated,
        logged,
        wideBlocks,
        reusedIps,
        reads: () => reads,
        at: (t: number) => (now = t),
    };
}

test("nothing due: no rotation, the next deadline shown, ages read once while the fleet stays the same", async () => {
    const { r, asked, reads } = rig();
    await r.runOnce();
    await r.runOnce();
    assert.equal(asked.length, 0);
    assert.equal(reads(), 1, "ages are read again only when the fleet changes");
    const v = r.view("web")!;
    assert.equal(v.rotateAfterSeconds, 60);
    assert.equal(v.nextDueAt, new Date(dueAtOf("web-0", T0, 60)).toISOString());
    assert.equal(r.view("still"), undefined, "a pool without rotateAfterSeconds has no rotation view");
});

test("a due member is handed to the scaler only while it accepts and is idle", async () => {
    const { r, asked, queue, at, rotated } = rig();
    at(dueAtOf("web-0", T0, 60));
    queue.busy = true;
    await r.runOnce();
    queue.busy = false;
    queue.accepts = false; // not leading, or still recovering
    await r.runOnce();
    assert.equal(asked.length, 0);
    queue.accepts = true;
    await r.runOnce();
    assert.deepEqual(
        asked.map((a) => a.records.map((x) => x.member)),
        [["web-0"]],
    );
    const [rec] = asked[0].records;
    assert.equal(rec.reason, "age");
    assert.equal(rec.createdAt, new Date(T0).toISOString());
    assert.deepEqual(rotated, ["web"]);
});

test("a running rotation asks for members that came due meanwhile (none once this replica stops leading)", async () => {
    const { r, asked, queue, at, created, members } = rig();
    at(dueAtOf("web-0", T0, 60));
    await r.runOnce();
    // web-0 replaced: a new process (new url, so ages are read again) and a new creation stamp.
    const later = Math.max(dueAtOf("web-1", T0 + 10_000, 60), dueAtOf("web-2", T0 + 20_000, 60));
    created.set("web-0", later - 1000);
    members[0] = { ...members[0], url: "http://127.0.0.1:99" };
    at(later);
    const more = await asked[0].more!(3);
    assert.deepEqual(
        more.map((m) => m.member),
        [dueAtOf("web-1", T0 + 10_000, 60) <= dueAtOf("web-2", T0 + 20_000, 60) ? "web-1" : "web-2"],
        "at most maxSurge at a time",
    );
    queue.accepts = false;
    assert.deepEqual(await asked[0].more!(3), []);
});

test("after a stop: the last unfinished rotation's pool count is restored, unless the file moved on", () => {
    const op = (kind: Operation["kind"], status: Operation["status"], desired: Record<string, number>, surge = 0) =>
        ({
            kind,
            status,
            desired,
            rotations: Array.from({ length: surge }, (_, j) => ({ surge: `web-${3 + j}` })),
        }) as unknown as Operation;
    const file = (n: number) => (pool: string) => (pool === "web" ? n : undefined);
    const cut = op("rotate", "interrupted", { web: 3 }, 1);
    assert.deepEqual(countsToRestore([cut], file(4)), { web: 3 }, "grown by its surge: back to 3");
    assert.deepEqual(countsToRestore([cut], file(3)), {}, "its shrink ran: nothing to do");
    assert.deepEqual(countsToRestore([cut], file(6)), {}, "someone set a count meanwhile: left alone");
    assert.deepEqual(countsToRestore([cut, op("scale", "succeeded", { web: 4 })], file(4)), {}, "a later scale wins");
    assert.deepEqual(countsToRestore([cut, op("heal", "succeeded", {})], file(4)), { web: 3 }, "a heal sets no count");
    assert.deepEqual(countsToRestore([op("rotate", "succeeded", { web: 3 }, 1)], file(4)), {});
    assert.deepEqual(countsToRestore([op("rotate", "failed", { web: 3 }, 2)], file(5)), { web: 3 });
    // A rolling change cut mid-roll (its `desired` may not name the pool: a start-up convergence).
    const rolling = (status: Operation["status"]) =>
        ({
            kind: "up",
            status,
            desired: {},
            rolling: { pool: "web", replicas: 3, batch: 2, of: 3, members: ["web-1"], surge: ["web-3"], replaced: [] },
        }) as unknown as Operation;
    assert.deepEqual(countsToRestore([rolling("interrupted")], file(4)), { web: 3 });
    assert.deepEqual(countsToRestore([rolling("failed")], file(3)), {}, "its shrink ran");
    assert.deepEqual(countsToRestore([rolling("succeeded")], file(4)), {});
    assert.deepEqual(countsToRestore([rolling("interrupted"), op("scale", "succeeded", { web: 5 })], file(4)), {});
});

test("rotation by blocks in the loop: a tripped member is handed over with reason blocked; a pool-wide block begins, stays and clears", async () => {
    const { r, asked, at, rotated, logged, wideBlocks } = rig({
        rotateAfterSeconds: undefined,
        rotateOnBlocks: { ratio: 0.5, minOutcomes: 2, windowSeconds: 30 },
    });
    await r.runOnce();
    assert.deepEqual(r.view("web")?.rotateOnBlocks, { ratio: 0.5, minOutcomes: 2, windowSeconds: 30 });
    assert.equal(r.view("web")?.rotateAfterSeconds, undefined);
    // Everyone blocked: a pool-wide block, nobody handed over.
    for (const id of ["web-0", "web-1", "web-2"]) r.outcomesCounted(id, 2, 2);
    await r.runOnce();
    const wide = r.view("web")!.poolWideBlock!;
    assert.deepEqual(wide.members, ["web-0", "web-1", "web-2"]);
    assert.equal(wide.since, new Date(T0).toISOString());
    at(T0 + 10_000);
    await r.runOnce();
    assert.equal(r.view("web")!.poolWideBlock!.since, wide.since, "the same block goes on");
    assert.deepEqual(wideBlocks, ["web"], "counted once, as it began");
    assert.equal(logged.filter((l) => l.startsWith("pool-wide block on pool web")).length, 1, "one warn line");
    assert.equal(asked.length, 0);
    // The blocks age out of the 30 s window; then one member blocked alone is rotated.
    at(T0 + 31_000);
    await r.runOnce();
    assert.equal(r.view("web")!.poolWideBlock, undefined);
    assert.ok(logged.some((l) => l.includes("no longer blocked as a whole")));
    r.outcome("web-1", "blocked");
    r.outcome("web-1", "ok");
    await r.runOnce();
    assert.deepEqual(
        asked.map((a) => a.records.map((x) => [x.member, x.reason, x.detail])),
        [[["web-1", "blocked", "1 of 2 outcomes blocked in the last 30 s (ratio 0.5)"]]],
    );
    assert.deepEqual(rotated, ["web:blocked"]);
});

test("a replacement that comes back with an IP the pool had is flagged; its outcomes start afresh", async () => {
    const { r, asked, reusedIps, logged } = rig({ rotateOnBlocks: { ratio: 0.5, minOutcomes: 1, windowSeconds: 30 } });
    // health() reads no egressIp in this rig: the IP is learnt from the first replacement.
    const rec = { member: "web-0", pool: "web", reason: "blocked" as const, newEgressIp: "203.0.113.7" };
    assert.equal(r.replaced(rec), false, "a first sighting is no reuse");
    r.outcome("web-1", "blocked");
    assert.equal(r.replaced({ ...rec, member: "web-1" }), true, "the same IP again");
    assert.deepEqual(reusedIps, ["web"]);
    assert.ok(logged.some((l) => l.includes("an IP pool web used within its ipMemorySeconds (3600 s)")));
    await r.runOnce();
    assert.equal(asked.length, 0, "web-1's old block was forgotten with its replacement: nothing to rotate");
});
