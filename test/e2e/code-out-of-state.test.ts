/**
 * Issue 33: no provider code in state. A local stack made by the last release that stored each dynamic
 * provider's code in state (built from history, test/helpers/legacy-release.ts) converges under this tree
 * without replacing a member: one `up` updates every dynamic resource in place, and afterwards state holds
 * only loaders, the same processes run, `egress gc` finds nothing and the next `up` changes nothing. A
 * loader of a protocol this egress does not speak is refused by the real engine with a message that says so.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { cli, procProject, proxyProcesses, type ProcProject } from "../helpers/processes";
import { BEFORE_LOADERS_COMMIT, legacyCli } from "../helpers/legacy-release";
import { checkpointDir } from "../../src/engine/checkpoint";

const config = (replicas: number) => ({
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas, maxReplicas: 8 }],
});

const checkpointFile = (p: ProcProject) => path.join(checkpointDir(p.backendDir), `${p.stack}.json`);

/** Each dynamic resource's `__provider` in state (inputs and outputs), by URN. */
function providerTexts(p: ProcProject): Map<string, string[]> {
    const dep = JSON.parse(fs.readFileSync(checkpointFile(p), "utf8")).checkpoint.latest;
    const out = new Map<string, string[]>();
    for (const r of dep.resources as { urn: string; inputs?: any; outputs?: any }[])
        if (r.inputs?.__provider !== undefined) out.set(r.urn, [r.inputs.__provider, r.outputs?.__provider]);
    return out;
}

const LOADER = /^exports\.handler=\(\)=>require\("@egress\/providers"\)\.provider\("[^"]+",1\)$/;
const json = (p: ProcProject, ...args: string[]) => {
    const r = cli(p, [...args, "--json"]);
    return { ...r, body: r.stdout ? JSON.parse(r.stdout) : undefined };
};

test(
    "a stack whose state holds provider code converges with updates in place, no replace, and keeps its processes",
    { timeout: 600_000 },
    async (t) => {
        const p = procProject("loaders", config(3));
        try {
            const made = legacyCli(p, ["up", "--quiet"], 240_000, BEFORE_LOADERS_COMMIT);
            assert.equal(made.code, 0, made.stderr);
            const before = proxyProcesses(p);
            assert.equal(before.size, 3);
            const oldBytes = fs.statSync(checkpointFile(p)).size;
            const old = providerTexts(p);
            assert.equal(old.size, 4, "3 processes and the installation identity");
            for (const [urn, texts] of old)
                assert.ok(
                    texts.every((s) => s.length > 2000 && !LOADER.test(s)),
                    `code by value: ${urn}`,
                );

            const preview = json(p, "preview");
            assert.equal(preview.code, 0, preview.stderr);
            assert.deepEqual(preview.body.changes, { same: 5, update: 4 }, preview.stdout);

            const up = json(p, "up");
            assert.equal(up.code, 0, up.stderr);
            assert.deepEqual(up.body.changes, { same: 5, update: 4 }, up.stdout);
            assert.deepEqual(proxyProcesses(p), before, "the same processes run: nothing was replaced");
            const now = providerTexts(p);
            assert.deepEqual([...now.keys()].sort(), [...old.keys()].sort(), "the same URNs");
            for (const [urn, texts] of now)
                for (const s of texts) assert.match(s, LOADER, `inputs and outputs hold the loader: ${urn}`);
            const newBytes = fs.statSync(checkpointFile(p)).size;
            t.diagnostic(`checkpoint ${oldBytes} → ${newBytes} bytes for 3 members`);
            assert.ok(newBytes < oldBytes / 5, `${oldBytes} → ${newBytes}`);

            const again = json(p, "up");
            assert.equal(again.code, 0, again.stderr);
            assert.deepEqual(Object.keys(again.body.changes), ["same"], again.stdout);
            const gc = json(p, "gc");
            assert.equal(gc.code, 0, gc.stderr);
            assert.deepEqual(gc.body.orphans, [], gc.stdout);
        } finally {
            cli(p, ["destroy", "--yes", "--quiet"]);
            p.cleanup();
        }
    },
);

test(
    "a loader of another protocol is refused by name on the real engine, and state is left as it was",
    {
        timeout: 300_000,
    },
    async () => {
        const p = procProject("protocol", config(1));
        try {
            const up = cli(p, ["up", "--quiet"]);
            assert.equal(up.code, 0, up.stderr);
            const pids = proxyProcesses(p);
            // As a later egress (protocol 2) would have written it.
            const file = checkpointFile(p);
            fs.writeFileSync(
                file,
                fs.readFileSync(file, "utf8").replaceAll('local:Process\\",1)', 'local:Process\\",2)'),
            );
            const refused = cli(p, ["up", "--json"]);
            assert.notEqual(refused.code, 0, refused.stdout);
            assert.match(
                refused.stdout + refused.stderr,
                /written by an egress whose dynamic providers speak protocol 2; egress \S+ at \S+ speaks protocol 1/,
            );
            assert.deepEqual(proxyProcesses(p), pids, "the process was left alone");
        } finally {
            // Back to this protocol so destroy can stop the process.
            const file = checkpointFile(p);
            fs.writeFileSync(
                file,
                fs.readFileSync(file, "utf8").replaceAll('local:Process\\", 2)', 'local:Process\\", 1)'),
            );
            cli(p, ["destroy", "--yes", "--quiet"]);
            p.cleanup();
        }
    },
);
