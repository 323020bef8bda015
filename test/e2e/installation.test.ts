/**
 * The installation identity on the real engine (local proxies): a stack's first `up` records a fresh id,
 * a restart reads the same one back, and a stack made by the release before installation ids (built
 * from history, test/helpers/legacy-release.ts) adopts the id its names imply without touching its members.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { pidsMentioning, tempProject } from "../helpers/project";
import { cli, procProject, proxyProcesses } from "../helpers/processes";
import { legacyCli } from "../helpers/legacy-release";
import { checkpointResources, installationInState, StackDriver } from "../../src/engine";
import { localGoneCheck } from "../../components/local/gone";
import { legacyInstallationId } from "../../src/model";

const STACK = "ident";
const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 2, maxReplicas: 4 }],
};
const project = tempProject(STACK, config);
const runDir = `${project.dir}/run`;
/** A driver as a restarted process would make it: nothing shared with the first but the backend. */
const restarted = () =>
    new StackDriver({ workDir: project.dir, stack: STACK, home: (project.driver as any).home, env: project.env });

after(async () => {
    await project.driver.destroy().catch(() => undefined);
    project.cleanup();
});

test(
    "a first `up` records a fresh id before any member; a restart reads it back and changes nothing",
    { timeout: 300_000 },
    async () => {
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
    },
);

test(
    "a stack made by the release before installation ids adopts the id its names imply; its members keep running",
    { timeout: 600_000 },
    async () => {
        const old = procProject("legacy", config);
        try {
            const made = legacyCli(old, ["up", "--quiet"]);
            assert.equal(made.code, 0, made.stderr);
            const before = proxyProcesses(old);
            const outputsBefore = JSON.parse(cli(old, ["outputs", "--json"]).stdout).proxies;
            assert.equal(before.size, 2);
            assert.deepEqual(
                installationInState(checkpointResources(old.backendDir, "legacy"), "egress", "legacy").source,
                "legacy",
            );

            const up = cli(old, ["up", "--quiet"]);
            assert.equal(up.code, 0, up.stderr);
            assert.deepEqual(proxyProcesses(old), before, "the same processes run: nothing was replaced");
            assert.deepEqual(JSON.parse(cli(old, ["outputs", "--json"]).stdout).proxies, outputsBefore);
            assert.deepEqual(installationInState(checkpointResources(old.backendDir, "legacy"), "egress", "legacy"), {
                installation: { id: legacyInstallationId("egress", "legacy"), legacy: true },
                source: "recorded",
            });
            // A second `up` finds nothing to do, and the liveness hook sees the unmarked processes as ours.
            const again = cli(old, ["up", "--json"]);
            assert.equal(again.code, 0, again.stderr);
            assert.deepEqual(Object.keys(JSON.parse(again.stdout).changes), ["same"], again.stdout);
            const gone = await localGoneCheck({
                runDir: `${old.home}/run`,
                stack: "legacy",
                installation: { id: legacyInstallationId("egress", "legacy"), legacy: true },
            })(outputsBefore);
            assert.deepEqual([...gone], []);
        } finally {
            cli(old, ["destroy", "--yes", "--quiet"]);
            old.cleanup();
        }
    },
);
