/**
 * `egress gc` collects each provider entry on its own: a local entry with a real orphaned proxy process
 * next to a Kubernetes entry whose API server (a closed loopback port) refuses connections. The local
 * orphan is still found and removed; the unreachable entry is reported with its cause; the report is not ok
 * (exit code 1), also through the real CLI.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { isOurProcess, startProxy, stopProxy } from "../../components/local/process";
import { parseEgressConfig } from "../../src/config";
import { PACKAGE_ROOT } from "../../src/engine/env";
import { collectGarbage } from "../../src/gc";
import { gcText } from "../../src/cli/gc";
import { writeKubeconfig } from "../fixtures/kubernetes/fake-apiserver";
import { tempProject } from "../helpers/project";
import { TEST_INSTALLATION } from "../helpers/installation";
import { closedPort as freeClosedPort } from "../fixtures/ports";

const runDir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-gc-providers-"));
const started: { pid: number; id: string; stateDir: string }[] = [];
let closedPort: number;
let kubeconfig: string;

before(async () => {
    // Nothing listens there, and no server listening on port 0 (in this file or one running beside it) is
    // given it: it is below the ephemeral range. A port picked by listen(0) and closed was once taken by
    // another test's local proxy, which answered 400 instead of the refusal asserted here.
    closedPort = await freeClosedPort();
    kubeconfig = writeKubeconfig(`http://127.0.0.1:${closedPort}`);
});
after(async () => {
    for (const p of started) await stopProxy(p.pid, p.id, p.stateDir);
    fs.rmSync(runDir, { recursive: true, force: true });
    fs.rmSync(path.dirname(kubeconfig), { recursive: true, force: true });
});

const providers = () =>
    parseEgressConfig(
        {
            providers: {
                local: { type: "local" },
                k8s: { type: "kubernetes", kubeconfigPath: kubeconfig, context: "test" },
            },
        },
        "/",
    ).providers;

async function proxy(stack: string, member: string) {
    const stateDir = path.join(runDir, "local", stack);
    const id = `${stack}-${member}-0badc0de`;
    const p = await startProxy({
        id,
        port: 0,
        stateDir,
        serverScript: path.join(PACKAGE_ROOT, "dist", "components", "local", "proxy-server.js"),
        nodePath: process.execPath,
        installation: TEST_INSTALLATION,
    });
    started.push({ pid: p.pid, id, stateDir });
    return { pid: p.pid, id };
}

const refused = () =>
    new RegExp(
        `^\\[transient\\] GET /apis/apps/v1/namespaces/egress/deployments.*ECONNREFUSED 127\\.0\\.0\\.1:${closedPort}`,
    );

test("dry run: the local orphan is listed, the unreachable entry reports its cause, nothing is removed", async () => {
    const orphan = await proxy("gcdry", "web-0");
    const report = await collectGarbage(providers(), {
        project: "egress",
        stack: "gcdry",
        installation: TEST_INSTALLATION.id,
        stateIds: new Set(),
        runDir,
        delete: false,
    });

    assert.equal(report.ok, false);
    assert.equal(report.dryRun, true);
    const [local, k8s] = report.providers;
    assert.deepEqual(
        { ...local, orphans: local.orphans.map((t) => t.name) },
        { provider: "local", kind: "local", ok: true, found: 1, deleted: 0, orphans: [orphan.id] },
    );
    assert.deepEqual(
        [k8s.provider, k8s.kind, k8s.ok, k8s.found, k8s.deleted, k8s.orphans],
        ["k8s", "kubernetes", false, 0, 0, []],
    );
    assert.match(k8s.error!, refused());
    assert.ok(isOurProcess(orphan.pid, orphan.id), "a dry run removes nothing");

    const text = gcText(report);
    assert.match(text, new RegExp(`^orphan   local  process  ${orphan.id}  \\(`, "m"));
    assert.match(text, /^PROVIDER +KIND +FOUND +DELETED +RESULT$/m);
    assert.match(text, /^local +local +1 +- +ok$/m);
    assert.match(
        text,
        new RegExp(
            `^k8s +kubernetes +- +- +FAILED: \\[transient\\] GET /apis/apps/v1/namespaces/egress/deployments.*ECONNREFUSED 127\\.0\\.0\\.1:${closedPort} \\(gave up after \\d+ tries in [\\d.]+ s\\)$`,
            "m",
        ),
    );
    assert.match(text, /^1 orphan\(s\); run again with --delete to remove them$/m);
    assert.match(text, /^failed: k8s \(the other entries were still collected\)$/m);
});

test("--delete: the local orphan is removed, what state knows stays, the unreachable entry still fails", async () => {
    const orphan = await proxy("gcdel", "web-0");
    const known = await proxy("gcdel", "web-1");
    const report = await collectGarbage(providers(), {
        project: "egress",
        stack: "gcdel",
        installation: TEST_INSTALLATION.id,
        stateIds: new Set([known.id]),
        runDir,
        delete: true,
    });

    assert.equal(report.ok, false);
    const [local, k8s] = report.providers;
    assert.deepEqual(
        [local.ok, local.found, local.deleted, local.orphans.map((t) => [t.name, t.removed])],
        [true, 1, 1, [[orphan.id, true]]],
    );
    assert.equal(isOurProcess(orphan.pid, orphan.id), false, "the orphan is stopped");
    assert.equal(isOurProcess(known.pid, known.id), true, "what state knows is left alone");
    assert.match(k8s.error!, refused());
    assert.match(gcText(report), /^local +local +1 +1 +ok$/m);
});

test("every entry collected: the report is ok", async () => {
    const report = await collectGarbage(
        { local: providers().local },
        {
            project: "egress",
            stack: "gcnone",
            installation: TEST_INSTALLATION.id,
            stateIds: new Set(),
            runDir,
            delete: true,
        },
    );
    assert.deepEqual(report, {
        ok: true,
        dryRun: false,
        providers: [{ provider: "local", kind: "local", ok: true, found: 0, deleted: 0, orphans: [] }],
    });
    assert.match(gcText(report), /^nothing to collect: everything labelled for this stack is in state$/m);
});

test("the CLI prints per-entry results as JSON and exits 1 when an entry failed", async (t) => {
    const project = tempProject("gccli", {
        "egress:providers": {
            local: { type: "local" },
            k8s: { type: "kubernetes", kubeconfigPath: kubeconfig, context: "test" },
        },
        "egress:pools": [],
    });
    t.after(() => project.cleanup());
    await project.driver.config(); // creates the stack: gc never does
    const r = cp.spawnSync(
        process.execPath,
        [path.join(PACKAGE_ROOT, "dist", "src", "cli.js"), "--cwd", project.dir, "--stack", "gccli", "--json", "gc"],
        {
            encoding: "utf8",
            timeout: 60_000,
            env: { ...process.env, ...project.env },
        },
    );
    assert.equal(r.status, 1, r.stderr);
    const body = JSON.parse(r.stdout);
    assert.equal(body.ok, false);
    const byName = Object.fromEntries(body.providers.map((p: any) => [p.provider, p]));
    assert.deepEqual(Object.keys(byName).sort(), ["k8s", "local"]);
    assert.deepEqual([byName.local.ok, byName.local.found, byName.local.error], [true, 0, undefined]);
    assert.equal(byName.k8s.ok, false);
    assert.match(byName.k8s.error, refused());
    assert.deepEqual(body.orphans, [], "the flat list of every entry's orphans, as before per-entry results");
});
