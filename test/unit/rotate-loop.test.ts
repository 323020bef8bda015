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
import type { Operation, RotationRecord } from "../../src/service/operations/journal";
import type { PoolConfig, ProxyMember } from "../../src/model";

const T0 = 1_000_000_000_000;

function rig() {
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
    const pool = { name: "web", replicas: 3, maxReplicas: 6, maxSurge: 1, rotateAfterSeconds: 60 } as PoolConfig;
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
        log: pino({ level: "silent" }),
        scaler,
        members: () => members,
        health: () => ({ state: "healthy" }) as never,
        pools: () => [pool, { ...pool, name: "still", rotateAfterSeconds: undefined }],
        createdAt: async () => {
            reads++;
            return created;
        },
        onRotate: (p) => rotated.push(p),
        now: () => now,
    });
    return { r, asked, queue, created, members, rotated, reads: () => reads, at: (t: number) => (now = t) };
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
