/**
 * A SIGKILL can leave a file backend's `.attrs` sidecar empty (it is rewritten in place) and temp files
 * of unfinished writes; the next command would fail with "failed to load checkpoint: EOF".
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { repairFileBackend } from "../../src/engine/backend-repair";

function backend(): { dir: string; stacks: string } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-backend-"));
    const stacks = path.join(dir, ".pulumi", "stacks", "egress");
    fs.mkdirSync(stacks, { recursive: true });
    fs.writeFileSync(path.join(stacks, "s.json"), JSON.stringify({ version: 3, checkpoint: {} }));
    fs.writeFileSync(path.join(stacks, "s.json.attrs"), ""); // killed mid-rewrite
    fs.writeFileSync(path.join(stacks, "s.json.bak.attrs"), JSON.stringify({ "user.cache_control": "" }));
    fs.writeFileSync(path.join(stacks, "s.json.18ecc8a3da11b490.tmp"), '{"half');
    fs.writeFileSync(path.join(stacks, "other.json.attrs"), ""); // another stack's: not ours to touch
    return { dir, stacks };
}

test("an empty .attrs sidecar and temp files of the stack are removed; good files and other stacks stay", () => {
    const { dir, stacks } = backend();
    const done = repairFileBackend(dir, "s");
    assert.equal(done.length, 2);
    assert.match(done.join("\n"), /s\.json\.attrs/);
    assert.deepEqual(fs.readdirSync(stacks).sort(), ["other.json.attrs", "s.json", "s.json.bak.attrs"]);
    assert.deepEqual(repairFileBackend(dir, "s"), [], "a second run finds nothing");
    fs.rmSync(dir, { recursive: true, force: true });
});

test("no file backend: nothing to do", () => {
    assert.deepEqual(repairFileBackend(undefined, "s"), []);
});
