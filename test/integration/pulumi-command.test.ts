/**
 * The Pulumi CLI's version is asked once per binary, not once per process (src/engine/pulumi-command.ts):
 * a stand-in `pulumi` counts its calls. A second lookup reads the cache file; a rebuilt binary (new
 * modification time), a cache written for another binary and an unreadable cache are each asked again; an
 * engine home whose `bin` is a link to this one (as each test project's is) uses the same entry.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { findPulumiCommand } from "../../src/engine/pulumi-command";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "egress-pulumi-command-"));
after(() => fs.rmSync(root, { recursive: true, force: true }));
const bin = path.join(root, "bin");
const binary = path.join(bin, "pulumi");
const calls = path.join(root, "calls");
const cache = path.join(bin, "pulumi.version.json");
fs.mkdirSync(bin);
fs.writeFileSync(binary, `#!/bin/sh\necho "$1" >> "${calls}"\necho v3.248.0\n`, { mode: 0o755 });
const asked = () => (fs.existsSync(calls) ? fs.readFileSync(calls, "utf8").trim().split("\n").length : 0);

test("the first lookup asks `pulumi version` and remembers it; the next reads the cache", async () => {
    const first = await findPulumiCommand(root);
    assert.equal(first.command, binary);
    assert.equal(first.version?.version, "3.248.0");
    assert.equal(asked(), 1);
    assert.equal(JSON.parse(fs.readFileSync(cache, "utf8")).version, "3.248.0");

    const second = await findPulumiCommand(root);
    assert.equal(asked(), 1, "not asked again");
    assert.equal(second.command, binary);
    assert.equal(second.version?.version, "3.248.0");
    assert.equal(second.version?.compare("3.100.0"), 1, "a real SemVer, as the SDK compares it");
    // It runs the binary as the SDK's own would (run is private in the SDK's types only).
    type Run = (args: string[], cwd: string, env: Record<string, string>) => Promise<{ stdout: string }>;
    const out = await (second as unknown as { run: Run }).run(["whoami"], root, {});
    assert.equal(out.stdout.trim(), "v3.248.0");
    assert.match(fs.readFileSync(calls, "utf8"), /^whoami$/m, "the command it holds ran the binary");
});

test("another engine home linking the same bin directory reads the same entry", async () => {
    const before = asked();
    const other = fs.mkdtempSync(path.join(os.tmpdir(), "egress-pulumi-command-home-"));
    try {
        fs.symlinkSync(bin, path.join(other, "bin"));
        const c = await findPulumiCommand(other);
        assert.equal(asked(), before, "not asked again");
        assert.equal(c.command, path.join(other, "bin", "pulumi"), "the command is the home's own path");
        assert.equal(c.version?.version, "3.248.0");
    } finally {
        fs.rmSync(other, { recursive: true, force: true });
    }
});

test("a rebuilt binary, a cache written for another binary, an unreadable cache: each asked again", async () => {
    const before = asked(); // the version ask and the run above
    const later = new Date(Date.now() + 5000);
    fs.utimesSync(binary, later, later);
    await findPulumiCommand(root);
    assert.equal(asked(), before + 1, "a new modification time is a new binary");

    const r = JSON.parse(fs.readFileSync(cache, "utf8"));
    fs.writeFileSync(cache, JSON.stringify({ ...r, identity: `${r.identity}0`, version: "3.1.0" }));
    const again = await findPulumiCommand(root);
    assert.equal(asked(), before + 2, "a cache of another binary is not used");
    assert.equal(again.version?.version, "3.248.0");

    fs.writeFileSync(cache, "{not json");
    const c = await findPulumiCommand(root);
    assert.equal(asked(), before + 3);
    assert.equal(c.version?.version, "3.248.0");
    assert.equal(JSON.parse(fs.readFileSync(cache, "utf8")).version, "3.248.0", "rewritten");
});
