/**
 * egress-supervise (tools/supervise), the real binary from `npm run setup`, around a fake engine tree
 * (test/fixtures/supervise): engine processes die with the caller or with the command; processes without
 * the run's marker (local proxies) survive. Every process is found through pid files and its argv holding
 * the test's own temp dir, and killed at the end even when an assertion fails.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { engineHome } from "../../src/engine/env";
import { newRunMarker } from "../../src/engine/leftovers";
import { sleep, waitFor } from "../helpers/harness";

const SUPERVISOR = path.join(engineHome().binDir, "egress-supervise");
const FIXTURES = path.join(__dirname, "..", "fixtures", "supervise");
const TREE = path.join(FIXTURES, "tree.js");
const PARENT = path.join(FIXTURES, "parent.js");

function supervisor(): string {
    if (!fs.existsSync(SUPERVISOR))
        throw new Error(`egress-supervise is missing at ${SUPERVISOR}: run \`npm run setup\` (needs Go >= 1.21)`);
    return SUPERVISOR;
}

/** A temp dir for one test's pid files; `t.after` kills whatever of ours is still alive and removes it. */
function scratch(t: { after(fn: () => void): void }): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-supervise-"));
    t.after(() => {
        for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".pid"))) {
            const pid = Number(fs.readFileSync(path.join(dir, f), "utf8"));
            if (alive(pid, dir)) process.kill(pid, "SIGKILL");
        }
        fs.rmSync(dir, { recursive: true, force: true });
    });
    return dir;
}

/** Running (not a zombie) and ours: its argv holds our temp dir, so a reused pid never counts. */
function alive(pid: number, dir: string): boolean {
    try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
        if (/^\S+ \(.*\) [ZX]/s.test(stat)) return false;
        return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes(dir);
    } catch {
        return false;
    }
}

const pidOf = (dir: string, name: string) => Number(fs.readFileSync(path.join(dir, `${name}.pid`), "utf8"));

/** Runs `egress-supervise -- node tree.js <dir> <mode>` with the test as its caller. */
function superviseTree(
    dir: string,
    mode: string,
    env: NodeJS.ProcessEnv,
): ChildProcess & { closed: Promise<{ code: number | null; stdout: string; stderr: string }> } {
    const child = spawn(supervisor(), ["--", process.execPath, TREE, dir, mode], {
        env,
        stdio: ["ignore", "pipe", "pipe"],
    });
    fs.writeFileSync(path.join(dir, "supervisor.pid"), String(child.pid));
    let stdout = "",
        stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    // "close", not "exit": stdout is shared with the marked grandchild, so it closes only once that is dead.
    const closed = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
        child.on("close", (code) => resolve({ code, stdout, stderr })),
    );
    return Object.assign(child, { closed });
}

/** A broken supervisor must fail a test, not hang it (stdout never closing, say); `t.after` still cleans up. */
const LIMIT = { timeout: 20000 };
// Markers name this test process as their owner (as egress's do), so egress's own leftover sweep
// (src/engine/leftovers.ts) leaves the fake engine processes alone while the test runs.
const markerEnv = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
    ...process.env,
    EGRESS_ENGINE_RUN: newRunMarker(),
    EGRESS_SUPERVISE_PARENT: String(process.pid),
    ...extra,
});

test("the caller is SIGKILLed: the command and marked descendants die, unmarked ones live on", LIMIT, async (t) => {
    const dir = scratch(t);
    const parent = spawn(process.execPath, [PARENT, supervisor(), dir, TREE], {
        env: markerEnv(),
        stdio: ["ignore", "ignore", "inherit"],
    });
    fs.writeFileSync(path.join(dir, "parent.pid"), String(parent.pid));
    await waitFor(
        "the tree to start",
        () => fs.existsSync(path.join(dir, "ready")) && fs.existsSync(path.join(dir, "supervisor.pid")),
        10_000,
        25,
    );
    const [sup, child, marked, unmarked] = ["supervisor", "child", "marked", "unmarked"].map((n) => pidOf(dir, n));
    assert.ok(
        [sup, child, marked, unmarked].every((p) => alive(p, dir)),
        "all running before the kill",
    );

    parent.kill("SIGKILL");
    await waitFor(
        "supervisor, command and marked grandchild to die",
        () => !alive(sup, dir) && !alive(child, dir) && !alive(marked, dir),
        5000,
        25,
    );
    assert.ok(alive(unmarked, dir), "the unmarked grandchild (a proxy) survives");
});

test("without a marker only the command dies with the caller (proxies are indistinguishable)", LIMIT, async (t) => {
    const dir = scratch(t);
    const env = markerEnv();
    delete env.EGRESS_ENGINE_RUN;
    const parent = spawn(process.execPath, [PARENT, supervisor(), dir, TREE], {
        env,
        stdio: ["ignore", "ignore", "inherit"],
    });
    fs.writeFileSync(path.join(dir, "parent.pid"), String(parent.pid));
    await waitFor(
        "the tree to start",
        () => fs.existsSync(path.join(dir, "ready")) && fs.existsSync(path.join(dir, "supervisor.pid")),
        10_000,
        25,
    );
    const [sup, child, marked] = ["supervisor", "child", "marked"].map((n) => pidOf(dir, n));

    parent.kill("SIGKILL");
    await waitFor("supervisor and command to die", () => !alive(sup, dir) && !alive(child, dir), 5000, 25);
    assert.ok(alive(marked, dir), "a grandchild is left alone when there is no marker to recognise it");
});

test("the command exits: its code is passed on and marked leftovers are killed first", LIMIT, async (t) => {
    const dir = scratch(t);
    const run = superviseTree(dir, "exit", markerEnv());
    const { code, stdout } = await run.closed;
    assert.equal(code, 7);
    assert.equal(stdout, "tree-ready\n", "the command's stdout reaches the caller unchanged");
    assert.equal(
        alive(pidOf(dir, "marked"), dir),
        false,
        "the marked grandchild was killed before the supervisor exited",
    );
    assert.equal(alive(pidOf(dir, "unmarked"), dir), true, "the unmarked grandchild survives");
});

test("a command killed by a signal exits 128+signal", LIMIT, async () => {
    const r = spawn(supervisor(), ["--", process.execPath, "-e", "process.kill(process.pid, 'SIGKILL')"], {
        stdio: "ignore",
    });
    const code = await new Promise((resolve) => r.on("exit", resolve));
    assert.equal(code, 128 + 9);
});

test("SIGTERM and SIGHUP are forwarded to the command, SIGINT is not", LIMIT, async (t) => {
    const dir = scratch(t);
    const run = superviseTree(dir, "wait", markerEnv());
    await waitFor("the tree to start", () => fs.existsSync(path.join(dir, "ready")), 10_000, 25);
    const child = pidOf(dir, "child");

    run.kill("SIGINT"); // to the supervisor only: a terminal would have signalled the whole group itself
    await sleep(500);
    assert.equal(fs.existsSync(path.join(dir, "got-int")), false, "SIGINT not forwarded");
    assert.ok(alive(child, dir) && run.exitCode === null, "both keep running after SIGINT");

    run.kill("SIGHUP");
    await waitFor("the command to receive SIGHUP", () => fs.existsSync(path.join(dir, "got-hup")), 10_000, 25);
    run.kill("SIGTERM");
    const { code } = await run.closed;
    assert.equal(code, 3, "the command's own exit code after its SIGTERM handler");
    assert.ok(fs.existsSync(path.join(dir, "got-term")));
    assert.equal(alive(pidOf(dir, "marked"), dir), false);
});

test(
    "a caller that is already gone (EGRESS_SUPERVISE_PARENT mismatch) gets 125 and nothing starts",
    LIMIT,
    async (t) => {
        const dir = scratch(t);
        const run = superviseTree(dir, "wait", markerEnv({ EGRESS_SUPERVISE_PARENT: String(process.pid + 1) }));
        const { code, stderr } = await run.closed;
        assert.equal(code, 125);
        assert.match(stderr, /caller \d+ is gone/);
        assert.equal(fs.existsSync(path.join(dir, "child.pid")), false, "the command never ran");
    },
);
