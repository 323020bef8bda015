/** `egress gc` for the local kind: a proxy process state does not know is found, removed, and gone. */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { startProxy, isOurProcess } from "../../components/local/process";
import { knownToState } from "../../src/gc";
import { collectorFor } from "../../components/registry";
import { PACKAGE_ROOT } from "../../src/engine/env";
import { TEST_INSTALLATION } from "../helpers/installation";

const runDir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-gc-"));
after(() => fs.rmSync(runDir, { recursive: true, force: true }));

test("an orphaned local proxy is listed, matched against state, and removed", async () => {
    const stateDir = path.join(runDir, "local", "gcs");
    const id = "gcs-web-7-0badc0de";
    const started = await startProxy({
        id,
        port: 0,
        stateDir,
        serverScript: path.join(PACKAGE_ROOT, "dist", "components", "local", "proxy-server.js"),
        nodePath: process.execPath,
        installation: TEST_INSTALLATION,
    });
    assert.ok(isOurProcess(started.pid, id));

    // The same stack name of another installation sharing this run dir: never listed, so never removed.
    const theirsId = "gcs-web-8-0badc0de";
    const theirs = await startProxy({
        id: theirsId,
        port: 0,
        stateDir,
        serverScript: path.join(PACKAGE_ROOT, "dist", "components", "local", "proxy-server.js"),
        nodePath: process.execPath,
        installation: { id: "89abcdef", legacy: false },
    });
    after(() => process.kill(theirs.pid, "SIGKILL"));

    const collector = collectorFor("local", { type: "local" }, runDir)!;
    const things = await collector.list({ project: "egress", stack: "gcs", installation: TEST_INSTALLATION.id });
    assert.deepEqual(things, [
        { kind: "local", provider: "local", type: "process", name: id, location: stateDir, member: "web-7" },
    ]);
    assert.equal(knownToState(things[0], new Set([id])), true, "state knows it by ID");
    assert.equal(knownToState(things[0], new Set(["gcs-web-0-12345678"])), false, "an orphan otherwise");

    await collector.remove(things[0]);
    assert.equal(isOurProcess(started.pid, id), false, "the process is stopped");
    assert.deepEqual(await collector.list({ project: "egress", stack: "gcs", installation: TEST_INSTALLATION.id }), []);
    await collector.remove(things[0]); // already gone: still fine
    assert.ok(isOurProcess(theirs.pid, theirsId), "the other installation's proxy still runs");
    assert.deepEqual(
        (await collector.list({ project: "egress", stack: "gcs", installation: "89abcdef" })).map((t) => t.name),
        [theirsId],
        "its own gc finds it",
    );
});

test("state IDs that are paths match by their last segment (GCE, libvirt, Kubernetes)", () => {
    const thing = {
        kind: "gcp" as const,
        provider: "g",
        type: "instance",
        name: "egress-dev-web-0",
        location: "europe-west1-b",
    };
    assert.equal(knownToState(thing, new Set(["projects/p/zones/europe-west1-b/instances/egress-dev-web-0"])), true);
    assert.equal(knownToState(thing, new Set(["projects/p/zones/europe-west1-b/instances/egress-dev-web-1"])), false);
});
