/**
 * The stack's writer lock across real processes: complete-or-absent lock files, waiting with the holder
 * named, a bounded wait that fails naming the holder, a SIGKILLed holder's lock cleared (and reported),
 * a reused pid told apart by its start time, and mutual exclusion between racing processes.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { acquireWriterLock, LockHolder, processStartTime, WriterLockBusyError, writerLockFile } from "../../src/engine";
import { PACKAGE_ROOT } from "../../src/engine/env";
import { holdWriterLock, killHard } from "../helpers/cli";

const dirs: string[] = [];
const runDir = () => {
    dirs.push(fs.mkdtempSync(path.join(os.tmpdir(), "egress-wlock-")));
    return dirs[dirs.length - 1];
};
after(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

test("the lock file names its holder (pid, start time, host, command, since), 0600, removed on release", async () => {
    const dir = runDir();
    const lock = await acquireWriterLock({ runDir: dir, stack: "s", command: "egress up", waitMs: 0 });
    const file = writerLockFile(dir, "s");
    const held = JSON.parse(fs.readFileSync(file, "utf8")) as LockHolder;
    assert.equal(held.pid, process.pid);
    assert.equal(held.startTime, processStartTime(process.pid));
    assert.match(held.startTime ?? "", /^\d+$/);
    assert.equal(held.hostname, os.hostname());
    assert.equal(held.command, "egress up");
    assert.ok(Date.parse(held.since) > Date.now() - 5000);
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    lock.release();
    assert.ok(!fs.existsSync(file));
    lock.release(); // idempotent
    assert.deepEqual(fs.readdirSync(path.dirname(file)), [], "no temp files left behind");
});

test("a live holder: the waiter is told who holds it, and after the bound fails naming pid and command", async () => {
    const dir = runDir();
    const holder = await holdWriterLock(dir, "s", "egress scale web 5");
    try {
        const waits: LockHolder[] = [];
        const t0 = Date.now();
        await assert.rejects(
            acquireWriterLock({
                runDir: dir,
                stack: "s",
                command: "egress up",
                waitMs: 400,
                pollMs: 50,
                onWait: (h) => waits.push(h),
            }),
            (e: unknown) =>
                e instanceof WriterLockBusyError &&
                e.holder.pid === holder.pid &&
                e.message.includes(`pid ${holder.pid} (egress scale web 5)`),
        );
        assert.ok(Date.now() - t0 >= 400, "it waited the bound");
        assert.deepEqual(
            waits.map((h) => h.pid),
            [holder.pid],
            "told once per holder",
        );
        assert.equal(
            JSON.parse(fs.readFileSync(writerLockFile(dir, "s"), "utf8")).pid,
            holder.pid,
            "a live holder's lock is never removed",
        );
    } finally {
        await killHard(holder);
    }
});

test("a SIGKILLed holder leaves a lock that the next acquirer clears, reporting the dead holder", async () => {
    const dir = runDir();
    const holder = await holdWriterLock(dir, "s", "egress up");
    await killHard(holder);
    assert.ok(fs.existsSync(writerLockFile(dir, "s")), "kill -9 leaves the lock file");
    const stale: LockHolder[] = [];
    const lock = await acquireWriterLock({
        runDir: dir,
        stack: "s",
        command: "egress scale",
        waitMs: 0,
        onStale: (h) => stale.push(h),
    });
    assert.deepEqual(
        stale.map((h) => [h.pid, h.command]),
        [[holder.pid, "egress up"]],
    );
    assert.equal(lock.holder.pid, process.pid);
    lock.release();
});

test("a reused pid (same pid, other start time) counts as dead; an unreadable lock file too", async () => {
    const dir = runDir();
    const file = writerLockFile(dir, "s");
    fs.mkdirSync(path.dirname(file), { recursive: true });
    // Our own pid is alive, but this lock says it was taken by a process that started at another time.
    fs.writeFileSync(
        file,
        JSON.stringify({
            pid: process.pid,
            startTime: "1",
            hostname: os.hostname(),
            command: "egress up",
            since: "2020-01-01T00:00:00.000Z",
        }),
    );
    const stale: LockHolder[] = [];
    (
        await acquireWriterLock({ runDir: dir, stack: "s", command: "t", waitMs: 0, onStale: (h) => stale.push(h) })
    ).release();
    assert.equal(stale.length, 1);
    fs.writeFileSync(file, "{not json");
    (
        await acquireWriterLock({ runDir: dir, stack: "s", command: "t", waitMs: 0, onStale: (h) => stale.push(h) })
    ).release();
    assert.equal(stale.length, 2);
    assert.match(stale[1].command, /unreadable lock file/);
});

test("release never removes a lock another process took since", async () => {
    const dir = runDir();
    const mine = await acquireWriterLock({ runDir: dir, stack: "s", command: "a", waitMs: 0 });
    fs.rmSync(mine.file); // as if cleared by someone who (wrongly) thought it stale
    const other = await holdWriterLock(dir, "s", "b");
    try {
        mine.release();
        assert.equal(JSON.parse(fs.readFileSync(mine.file, "utf8")).pid, other.pid);
    } finally {
        await killHard(other);
    }
});

test("racing processes never hold the lock at the same time", { timeout: 60_000 }, async () => {
    const dir = runDir();
    const journal = path.join(dir, "journal");
    const mod = path.join(PACKAGE_ROOT, "dist", "src", "engine", "writer-lock.js");
    // Each worker appends "+pid" after taking the lock and "-pid" before releasing it, 15 times.
    const script = `const fs = require("fs"); const { acquireWriterLock } = require(${JSON.stringify(mod)});
(async () => { for (let i = 0; i < 15; i++) {
  const l = await acquireWriterLock({ runDir: ${JSON.stringify(dir)}, stack: "s", command: "w", waitMs: 30000, pollMs: 5 });
  fs.appendFileSync(${JSON.stringify(journal)}, "+" + process.pid + "\\n");
  await new Promise((r) => setTimeout(r, 2));
  fs.appendFileSync(${JSON.stringify(journal)}, "-" + process.pid + "\\n");
  l.release();
} })().catch((e) => { console.error(e); process.exit(1); });`;
    const workers = Array.from({ length: 3 }, () =>
        cp.spawn(process.execPath, ["-e", script], { stdio: ["ignore", "ignore", "inherit"] }),
    );
    const codes = await Promise.all(workers.map((w) => new Promise((r) => w.on("exit", r))));
    assert.deepEqual(codes, [0, 0, 0]);
    const lines = fs.readFileSync(journal, "utf8").trim().split("\n");
    assert.equal(lines.length, 3 * 15 * 2);
    for (let i = 0; i < lines.length; i += 2) {
        assert.equal(lines[i][0], "+", `line ${i}: ${lines[i]}`);
        assert.equal(
            lines[i + 1],
            `-${lines[i].slice(1)}`,
            `the holder at line ${i} released before anyone else entered`,
        );
    }
});

test("a holder that was killed but not yet reaped by its parent (a zombie) holds nothing: its lock is cleared", async () => {
    const dir = runDir();
    // `sleep 0.3` exits after its parent `sh` became `sleep 5` by exec, which never waits for it: the
    // child stays a zombie, /proc entry and start time intact, for the rest of those 5 s.
    const parent = cp.spawn("sh", ["-c", "sleep 0.3 & echo $!; exec sleep 5"], { stdio: ["ignore", "pipe", "ignore"] });
    try {
        const pid = Number((await new Promise<Buffer>((r) => parent.stdout!.once("data", r))).toString().trim());
        let state = "";
        for (let i = 0; i < 150 && state !== "Z"; i++) {
            await new Promise((r) => setTimeout(r, 20));
            const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
            state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
        }
        assert.equal(state, "Z", "the child is a zombie");
        const file = writerLockFile(dir, "s");
        fs.mkdirSync(path.dirname(file), { recursive: true });
        const zombie: LockHolder = {
            pid,
            startTime: processStartTime(pid),
            hostname: os.hostname(),
            command: "egress serve",
            since: new Date().toISOString(),
        };
        assert.match(zombie.startTime ?? "", /^\d+$/, "a zombie still has its start time");
        fs.writeFileSync(file, JSON.stringify(zombie));
        const stale: LockHolder[] = [];
        const lock = await acquireWriterLock({
            runDir: dir,
            stack: "s",
            command: "t",
            waitMs: 0,
            onStale: (h) => stale.push(h),
        });
        assert.equal(lock.holder.pid, process.pid);
        assert.deepEqual(
            stale.map((h) => h.pid),
            [pid],
        );
        lock.release();
    } finally {
        parent.kill("SIGKILL");
    }
});
