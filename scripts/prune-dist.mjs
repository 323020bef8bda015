// Removes compiled files from dist/ whose TypeScript source is gone (a file moved or deleted). tsc never
// deletes outputs, and `node --test dist/test/...` runs every .js it finds: a stale test of a moved
// folder (the components' old one, or dist/test/unit/kinds-registry.test.js) would fail every run after a pull.
// dist/ui is the dashboard bundle (scripts/build-ui.mjs), not tsc's, and is left alone.
import * as fs from "node:fs";
import * as path from "node:path";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const dist = path.join(root, "dist");
let removed = 0;

/** Walks `dir` (relative to dist/), removing outputs without a source; returns whether it ended up empty. */
function prune(dir) {
    const abs = path.join(dist, dir);
    for (const e of fs.readdirSync(abs, { withFileTypes: true })) {
        const rel = path.join(dir, e.name);
        if (e.isDirectory()) {
            if (prune(rel)) fs.rmdirSync(path.join(dist, rel));
            continue;
        }
        const m = /^(.*)\.js(\.map)?$/.exec(rel);
        if (m && !fs.existsSync(path.join(root, `${m[1]}.ts`))) {
            fs.rmSync(path.join(dist, rel));
            removed++;
        }
    }
    return fs.readdirSync(abs).length === 0;
}

if (fs.existsSync(dist))
    for (const e of fs.readdirSync(dist, { withFileTypes: true }))
        if (e.isDirectory() && e.name !== "ui" && prune(e.name)) fs.rmdirSync(path.join(dist, e.name));
if (removed) console.log(`[prune-dist] removed ${removed} compiled file(s) whose source is gone`);
