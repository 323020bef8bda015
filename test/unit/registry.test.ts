/**
 * One folder per provider kind under components/, each listed once by the registry; no source file
 * under src/ holds a kind's name as a string literal. (Which files may import which: layers.test.ts.)
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { KIND_NAMES, KINDS, kindOf } from "../../components/registry";
import { PACKAGE_ROOT } from "../../src/engine/env";

function sources(dir: string): string[] {
    return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
        const p = path.join(dir, d.name);
        return d.isDirectory() ? sources(p) : d.name.endsWith(".ts") ? [p] : [];
    });
}

const SRC = sources(path.join(PACKAGE_ROOT, "src"));

test("the registry lists every folder under components/ (but shared/), each once", () => {
    const folders = fs
        .readdirSync(path.join(PACKAGE_ROOT, "components"), { withFileTypes: true })
        .filter((d) => d.isDirectory() && d.name !== "shared")
        .map((d) => d.name)
        .sort();
    assert.deepEqual([...KIND_NAMES].sort(), folders);
    assert.equal(new Set(KIND_NAMES).size, KINDS.length);
    for (const name of KIND_NAMES) assert.equal(kindOf({ type: name }).type, name);
    assert.throws(() => kindOf({ type: "nope" }), /unknown provider kind `nope` \(known: /);
});

test("no file under src/ names a kind in a string literal", () => {
    const bad: string[] = [];
    for (const file of SRC) {
        const lines = fs.readFileSync(file, "utf8").split("\n");
        lines.forEach((line, i) => {
            for (const name of KIND_NAMES)
                if (new RegExp(`["'\`]${name}["'\`]`).test(line))
                    bad.push(`${path.relative(PACKAGE_ROOT, file)}:${i + 1}: ${line.trim()}`);
        });
    }
    assert.deepEqual(bad, []);
});
