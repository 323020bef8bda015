/**
 * What Node itself prints in a serve process is JSON too: a process warning becomes a warn line on
 * stdout, an uncaught exception or an unhandled rejection one fatal line on stderr, exit 1. A real
 * child process with serve's output set up, nothing else.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as path from "node:path";
import { PACKAGE_ROOT } from "../../src/engine/env";

const serveOutput = path.join(PACKAGE_ROOT, "dist", "src", "cli", "serve-output.js");

/** Runs `body` after jsonProcessOutput; every line of both streams must be a JSON object. */
function run(body: string) {
    const script = `const o = require(${JSON.stringify(serveOutput)}); o.jsonProcessOutput(o.serveLoggers()); ${body}`;
    const r = cp.spawnSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 20_000 });
    const parse = (text: string, name: string) =>
        text
            .split("\n")
            .filter(Boolean)
            .map((l) => {
                try {
                    return JSON.parse(l);
                } catch {
                    assert.fail(`a line on ${name} that is not JSON: ${JSON.stringify(l)}`);
                }
            });
    return { code: r.status, stdout: parse(r.stdout, "stdout"), stderr: parse(r.stderr, "stderr") };
}

test("a process warning is a warn line on stdout, not Node's text", () => {
    const r = run(`process.emitWarning("something is deprecated", "DeprecationWarning"); setTimeout(() => {}, 50);`);
    assert.equal(r.code, 0);
    assert.deepEqual(r.stderr, []);
    assert.deepEqual(
        r.stdout.map((l) => [l.level, l.msg, l.warning]),
        [[40, "node: something is deprecated", "DeprecationWarning"]],
    );
});

test("an uncaught exception: one fatal line on stderr, exit 1", () => {
    const r = run(`setTimeout(() => { throw new Error("boom"); }, 10);`);
    assert.equal(r.code, 1);
    assert.deepEqual(r.stdout, []);
    assert.deepEqual(
        r.stderr.map((l) => [l.level, l.msg, l.origin, l.exitCode, l.err?.message]),
        [[60, "uncaught exception: boom", "uncaughtException", 1, "boom"]],
    );
});

test("an unhandled rejection: one fatal line on stderr, exit 1", () => {
    const r = run(`Promise.reject(new Error("nobody waits"));`);
    assert.equal(r.code, 1);
    assert.deepEqual(
        r.stderr.map((l) => [l.level, l.msg, l.origin]),
        [[60, "unhandled rejection: nobody waits", "unhandledRejection"]],
    );
});
