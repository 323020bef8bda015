/**
 * scripts/prune-dist.mjs (run before tsc by `npm run build` and scripts/setup.sh): compiled files whose
 * source moved or went away leave dist/, so `node --test dist/test/...` never runs a stale test; the
 * dashboard bundle in dist/ui and every output with a source stay.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PACKAGE_ROOT } from "../../src/engine/env";

/** Every file under `dir`, relative to it, sorted. */
function files(dir: string, rel = ""): string[] {
    return fs
        .readdirSync(path.join(dir, rel), { withFileTypes: true })
        .flatMap((e) => (e.isDirectory() ? files(dir, path.join(rel, e.name)) : [path.join(rel, e.name)]))
        .sort();
}

test("prune-dist removes outputs without a source and the folders they leave empty, nothing else", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "egress-prune-"));
    try {
        const put = (rel: string) => {
            fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
            fs.writeFileSync(path.join(root, rel), "");
        };
        fs.mkdirSync(path.join(root, "scripts"));
        fs.copyFileSync(
            path.join(PACKAGE_ROOT, "scripts", "prune-dist.mjs"),
            path.join(root, "scripts", "prune-dist.mjs"),
        );
        for (const f of [
            "components/local/index.ts",
            "dist/components/local/index.js",
            "dist/components/local/index.js.map",
            "dist/ui/app.js",
            "dist/moved/local/index.js",
            "dist/moved/local/index.js.map",
            "dist/test/unit/kinds-registry.test.js",
            "test/unit/layers.test.ts",
            "dist/test/unit/layers.test.js",
        ])
            put(f);
        const r = cp.spawnSync(process.execPath, [path.join(root, "scripts", "prune-dist.mjs")], { encoding: "utf8" });
        assert.equal(r.status, 0, r.stderr);
        assert.match(r.stdout, /removed 3 compiled file\(s\)/);
        assert.deepEqual(files(path.join(root, "dist")), [
            "components/local/index.js",
            "components/local/index.js.map",
            "test/unit/layers.test.js",
            "ui/app.js",
        ]);
        assert.equal(fs.existsSync(path.join(root, "dist", "moved")), false);
    } finally {
        fs.rmSync(root, { recursive: true, force: true });
    }
});
