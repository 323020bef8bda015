/**
 * The folder `kinds` became components/: the local proxy's server script path (`serverScript`, an input of every
 * `egress:local:Process` then) moved with it. A stack made by the release before the move (built from history,
 * test/helpers/legacy-release.ts) previews an in-place update and no replace, and its `up` keeps every proxy
 * process running; URNs (type tokens) are the same, and the path leaves state (since issue 33 the installed
 * provider knows it).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cli, procProject, proxyProcesses } from "../helpers/processes";
import { BEFORE_COMPONENTS_COMMIT, legacyCli } from "../helpers/legacy-release";
import { checkpointResources } from "../../src/engine";

const STACK = "moved";
const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 2, maxReplicas: 4 }],
};

/** The `serverScript` input of each local proxy process in state, by URN. */
function serverScripts(backendDir: string): Map<string, string> {
    const out = new Map<string, string>();
    for (const r of (checkpointResources(backendDir, STACK) ?? []) as {
        urn: string;
        inputs?: { serverScript?: unknown };
    }[])
        if (typeof r.inputs?.serverScript === "string") out.set(r.urn, r.inputs.serverScript);
    return out;
}

test(
    "a local stack made before components/ moved previews an update (no replace) and keeps its processes on `up`",
    { timeout: 600_000 },
    async () => {
        const old = procProject(STACK, config);
        try {
            const made = legacyCli(old, ["up", "--quiet"], 240_000, BEFORE_COMPONENTS_COMMIT);
            assert.equal(made.code, 0, made.stderr);
            const before = proxyProcesses(old);
            assert.equal(before.size, 2);
            const scriptsBefore = serverScripts(old.backendDir);
            assert.equal(scriptsBefore.size, 2);
            for (const s of scriptsBefore.values())
                assert.match(
                    s,
                    /\/dist\/kinds\/local\/proxy-server\.js$/,
                    "the old path is an input: the case this test is about",
                );

            const preview = cli(old, ["preview", "--json"]);
            assert.equal(preview.code, 0, preview.stderr);
            const changes = JSON.parse(preview.stdout).changes as Record<string, number>;
            assert.deepEqual(
                Object.keys(changes).filter((op) => op !== "same" && op !== "update"),
                [],
                preview.stdout,
            );
            // One per process, and the identity's: every dynamic resource takes the loader in place (issue 33).
            assert.equal(changes.update, 3, `one in-place update per dynamic resource: ${preview.stdout}`);

            const up = cli(old, ["up", "--json"]);
            assert.equal(up.code, 0, up.stderr);
            assert.equal(JSON.parse(up.stdout).changes.replace, undefined, up.stdout);
            assert.deepEqual(proxyProcesses(old), before, "the same processes run: nothing was replaced");
            // The script's path is no input any more (issue 33): the installed provider knows it.
            assert.deepEqual(serverScripts(old.backendDir), new Map(), "the old path left state in the update");
            const urns = (checkpointResources(old.backendDir, STACK) ?? []).map((r) => (r as { urn: string }).urn);
            for (const urn of scriptsBefore.keys()) assert.ok(urns.includes(urn), `same URN ${urn}`);
            const again = cli(old, ["up", "--json"]);
            assert.deepEqual(Object.keys(JSON.parse(again.stdout).changes), ["same"], again.stdout);
        } finally {
            cli(old, ["destroy", "--yes", "--quiet"]);
            old.cleanup();
        }
    },
);
