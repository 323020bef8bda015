/**
 * The installation identity on the real engine (local proxies): a stack's first `up` records a fresh id,
 * a restart reads the same one back, and a stack made before installation ids adopts the id its names
 * imply without touching its members.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { pidsMentioning, tempProject } from "../helpers/project";
import { pulumiCli } from "../helpers/pulumi-cli";
import { IDENTITY_TYPE, StackDriver } from "../../src/engine";
import { legacyInstallationId } from "../../src/model";

const STACK = "ident";
const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 2, maxReplicas: 4 }],
};
const project = tempProject(STACK, config);
const runDir = `${project.dir}/run`;
/** A driver as a restarted process would make it: nothing shared with the first but the backend. */
const restarted = () => new StackDriver({ workDir: project.dir, stack: STACK, home: (project.driver as any).home, env: project.env });

after(async () => {
    await project.driver.destroy().catch(() => undefined);
    project.cleanup();
});

test("a first `up` records a fresh id before any member; a restart reads it back and changes nothing", { timeout: 300_000 }, async () => {
    const before = await project.driver.installation();
    assert.equal(before.source, "new");
    await project.driver.up();
    const after1 = await project.driver.installation();
    assert.equal(after1.source, "recorded");
    assert.equal(after1.installation.legacy, false);
    assert.match(after1.installation.id, /^[0-9a-f]{8}$/);
    assert.equal((await project.driver.up()).changes.create ?? 0, 0);
    const pids = pidsMentioning(runDir).sort();
    assert.equal(pids.length, 2);

    const other = restarted();
    assert.deepEqual(await other.installation(), after1, "the id lives in state, not in the process");
    const again = await other.up();
    assert.deepEqual(Object.keys(again.changes), ["same"], JSON.stringify(again.changes));
    assert.deepEqual(pidsMentioning(runDir).sort(), pids, "no member was touched");
});

test("a stack made before installation ids adopts the id its names imply; its members stay", { timeout: 300_000 }, async () => {
    // A pre-identity stack: the same members, no identity resource (local members' names never held an id).
    const urn = JSON.parse(pulumiCli(project, "stack", "export", "-s", STACK)).deployment.resources.find((r: { type: string }) => r.type === IDENTITY_TYPE).urn;
    pulumiCli(project, "state", "delete", urn, "--yes", "-s", STACK);
    const pids = pidsMentioning(runDir).sort();
    const driver = restarted();
    assert.deepEqual(await driver.installation(), { installation: { id: legacyInstallationId("egress", STACK), legacy: true }, source: "legacy" });

    const up = await driver.up();
    assert.deepEqual(up.changes, { create: 1, same: up.changes.same }, "only the identity is created");
    assert.deepEqual(pidsMentioning(runDir).sort(), pids, "the members kept running, untouched");
    assert.deepEqual(await driver.installation(), { installation: { id: legacyInstallationId("egress", STACK), legacy: true }, source: "recorded" });
    const outputs = JSON.parse(pulumiCli(project, "stack", "output", "--json", "-s", STACK));
    assert.equal(outputs.installation, legacyInstallationId("egress", STACK));
});
