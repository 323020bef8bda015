/** The resume buffer of an operation's event stream is bounded and keeps numbering across the drop. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { OperationLog, STREAM_BUFFER } from "../../src/state/operations/journal";

test("the stream buffer keeps the newest STREAM_BUFFER entries; ids keep counting", () => {
    const log = new OperationLog();
    const op = log.create("scale", { web: 2 });
    for (let i = 0; i < STREAM_BUFFER + 5; i++)
        log.progress(op, { at: new Date(0).toISOString(), kind: "diagnostic", message: `m${i}` });
    log.update(op, { status: "succeeded" });
    const all = log.streamOf(op.id);
    assert.equal(all.length, STREAM_BUFFER);
    assert.equal(all.at(-1)!.id, STREAM_BUFFER + 7, "1 status at create + progress + 1 status");
    assert.equal(all[0].id, 8, "the oldest 7 were dropped");
    assert.deepEqual(
        log.streamOf(op.id, STREAM_BUFFER + 5).map((e) => e.id),
        [STREAM_BUFFER + 6, STREAM_BUFFER + 7],
    );
    assert.equal((all.at(-1)!.data as { status: string }).status, "succeeded");
    assert.deepEqual(
        all.filter((e) => e.type === "status").map((e) => e.id),
        [STREAM_BUFFER + 7],
        "the create-time status fell out of the buffer",
    );
});

test("status entries are snapshots: later changes do not rewrite earlier events", () => {
    const log = new OperationLog();
    const op = log.create("scale", { web: 1 });
    log.update(op, { status: "running" });
    log.update(op, { status: "succeeded" });
    assert.deepEqual(
        log.streamOf(op.id).map((e) => (e.data as { status: string }).status),
        ["queued", "running", "succeeded"],
    );
});
