/**
 * `egress scale` without a service, on the real engine: it writes the stack file only under the stack's
 * writer lock, gives the file back byte for byte when `up` cannot start, clears a SIGKILLed holder's
 * lock with a line saying so, and `egress doctor` names who holds the locks.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { tempProject } from "../helpers/project";
import { holdWriterLock, killHard, runCli, testHome } from "../helpers/cli";
import { writerLockFile } from "../../src/engine";

const project = tempProject("cw", {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 1, maxReplicas: 4 }],
});
const home = testHome();
const env = { ...project.env, EGRESS_HOME: home.dir };
const file = path.join(project.dir, "stacks", "Pulumi.cw.yaml");
const egress = (...args: string[]) => runCli(env, ["--cwd", project.dir, "--stack", "cw", ...args]);
const lockDir = path.join(project.dir, "backend", ".pulumi", "locks", "organization", "egress", "cw");

before(async () => {
    // A comment and odd spacing: "byte for byte" means the person's formatting survives too.
    fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace("config:", "# the dev pool\nconfig:  "));
});
after(async () => {
    await egress("destroy", "--yes", "--quiet");
    project.cleanup();
    home.cleanup();
});

test(
    "a live process holds the writer lock: scale waits, then fails naming it (exit 1), file untouched; so do up/refresh/destroy/gc --delete",
    { timeout: 60_000 },
    async () => {
        const before = fs.readFileSync(file);
        const holder = await holdWriterLock(home.runDir, "cw", "egress up");
        try {
            const r = await egress("--lock-wait", "1", "--json", "scale", "web", "3");
            assert.equal(r.code, 1, r.stderr);
            assert.match(r.stderr, new RegExp(`waiting for stack cw: pid ${holder.pid} \\(egress up\\)`));
            const body = JSON.parse(r.stdout);
            assert.equal(body.ok, false);
            assert.equal(body.error.type, "WriterLockBusyError");
            assert.match(body.error.message, new RegExp(`pid ${holder.pid} \\(egress up\\)`));
            assert.deepEqual(fs.readFileSync(file), before);
            for (const cmd of [["up"], ["refresh"], ["destroy", "--yes"], ["gc", "--delete"]]) {
                const other = await egress("--lock-wait", "0", ...cmd);
                assert.equal(other.code, 1, `${cmd.join(" ")}: ${other.stderr}`);
                assert.match(
                    other.stderr,
                    new RegExp(`being changed by pid ${holder.pid} \\(egress up\\)`),
                    cmd.join(" "),
                );
            }
        } finally {
            await killHard(holder);
        }
    },
);

test(
    "the engine is missing (bad EGRESS_HOME): scale exits 3 and the file is restored byte for byte",
    { timeout: 60_000 },
    async () => {
        const before = fs.readFileSync(file);
        const empty = fs.mkdtempSync(path.join(os.tmpdir(), "egress-nobin-"));
        const r = await runCli({ ...project.env, EGRESS_HOME: empty }, [
            "--cwd",
            project.dir,
            "--stack",
            "cw",
            "scale",
            "web",
            "3",
        ]);
        assert.equal(r.code, 3, r.stderr);
        assert.match(r.stderr, /replicas 1 -> 3/, "it did write the file first");
        assert.match(r.stderr, /restored .*Pulumi\.cw\.yaml \(replicas: 1\): the update changed nothing/);
        assert.deepEqual(fs.readFileSync(file), before);
        assert.ok(
            !fs.existsSync(writerLockFile(path.join(empty, "run"), "cw")),
            "the writer lock is released on the error path",
        );
        fs.rmSync(empty, { recursive: true, force: true });
    },
);

test(
    "a SIGKILLed writer's lock is cleared by the next command, which says so and scales",
    { timeout: 120_000 },
    async () => {
        const holder = await holdWriterLock(home.runDir, "cw", "egress scale web 4");
        await killHard(holder);
        const r = await egress("--json", "scale", "web", "2");
        assert.equal(r.code, 0, r.stderr);
        assert.match(
            r.stderr,
            new RegExp(
                `cleared a stale writer lock of stack cw: pid ${holder.pid} \\(egress scale web 4\\).* is no longer running`,
            ),
        );
        const body = JSON.parse(r.stdout);
        assert.deepEqual([body.ok, body.via, body.previous, body.requested, body.applied], [true, "file", 1, 2, 2]);
        assert.deepEqual(
            body.proxies.map((p: { id: string }) => p.id),
            ["web-0", "web-1"],
        );
        assert.match(fs.readFileSync(file, "utf8"), /replicas: 2/);
        assert.ok(!fs.existsSync(writerLockFile(home.runDir, "cw")), "released after success");
    },
);

test(
    "another update holds the Pulumi lock: up cannot start, the file is restored, exit 1",
    { timeout: 120_000 },
    async () => {
        const before = fs.readFileSync(file);
        const other = cp.spawn("sleep", ["60"]); // a live process on this host, as a running `pulumi up` would be
        fs.mkdirSync(lockDir, { recursive: true });
        const lock = path.join(lockDir, "11111111-live.json");
        fs.writeFileSync(
            lock,
            JSON.stringify({
                pid: other.pid,
                username: "root",
                hostname: os.hostname(),
                timestamp: new Date().toISOString(),
            }),
        );
        try {
            const r = await egress("scale", "web", "3");
            assert.equal(r.code, 1, r.stderr);
            assert.match(r.stderr, /another update holds the stack lock/);
            assert.match(r.stderr, /restored .*\(replicas: 2\): the update changed nothing/);
            assert.deepEqual(fs.readFileSync(file), before);
        } finally {
            fs.rmSync(lock, { force: true });
            other.kill("SIGKILL");
        }
    },
);

test(
    "doctor names a live writer-lock holder, a stale Pulumi lock, and a stale writer lock",
    { timeout: 60_000 },
    async () => {
        const holder = await holdWriterLock(home.runDir, "cw", "egress up");
        const stale = path.join(lockDir, "22222222-dead.json");
        fs.writeFileSync(
            stale,
            JSON.stringify({
                pid: 2 ** 22 + 17,
                username: "root",
                hostname: os.hostname(),
                timestamp: new Date().toISOString(),
            }),
        );
        try {
            const live = JSON.parse((await egress("--json", "doctor")).stdout);
            const w = live.findings.find((f: { check: string }) => f.check === "writer lock");
            assert.equal(w.ok, true);
            assert.match(w.detail, new RegExp(`held by pid ${holder.pid} \\(egress up\\) since `));
            const p = live.findings.find((f: { check: string }) => f.check === "pulumi lock");
            assert.equal(p.ok, false);
            assert.match(p.detail, new RegExp(`stale: pid ${2 ** 22 + 17}@${os.hostname()} is gone`));
            await killHard(holder);
            const after = await egress("--json", "doctor");
            const w2 = JSON.parse(after.stdout).findings.find((f: { check: string }) => f.check === "writer lock");
            assert.equal(w2.ok, false);
            assert.match(w2.detail, new RegExp(`stale: left by pid ${holder.pid} \\(egress up\\)`));
            assert.ok(fs.existsSync(writerLockFile(home.runDir, "cw")), "doctor only reports");
        } finally {
            await killHard(holder);
            fs.rmSync(stale, { force: true });
        }
    },
);
