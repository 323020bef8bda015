/**
 * `--json` output has one envelope for every command: `outputs --json` prints `{ok:true, proxies}` like
 * `up --json` does, on the real engine, through both entry points (dist/src/cli.js and bin/egress).
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as path from "node:path";
import { OFFLINE_ENV, tempProject } from "../helpers/project";
import { runCli, testHome } from "../helpers/cli";
import { PACKAGE_ROOT } from "../../src/engine";

const project = tempProject("env", {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 2, maxReplicas: 4 }],
});
const home = testHome();
const env = { ...project.env, EGRESS_HOME: home.dir };
const egress = (...args: string[]) => runCli(env, ["--cwd", project.dir, "--stack", "env", ...args]);
after(async () => {
    await egress("destroy", "--yes", "--quiet");
    project.cleanup();
    home.cleanup();
});

test(
    "outputs --json is {ok:true, proxies} with the proxies up --json reported, from cli.js and bin/egress",
    { timeout: 180_000 },
    async () => {
        const up = await egress("--json", "up", "--quiet");
        assert.equal(up.code, 0, up.stderr);
        const upBody = JSON.parse(up.stdout.trim().split("\n").pop()!);
        assert.equal(upBody.ok, true);
        assert.equal(upBody.proxies.length, 2);

        const out = await egress("--json", "outputs");
        assert.equal(out.code, 0, out.stderr);
        const body = JSON.parse(out.stdout);
        assert.deepEqual(Object.keys(body), ["ok", "proxies"]);
        assert.equal(body.ok, true);
        assert.deepEqual(body.proxies, upBody.proxies);

        const viaBin = cp.spawnSync(
            path.join(PACKAGE_ROOT, "bin", "egress"),
            ["--cwd", project.dir, "--stack", "env", "--json", "outputs"],
            { encoding: "utf8", env: { ...process.env, ...OFFLINE_ENV, ...env }, timeout: 60_000 },
        );
        assert.equal(viaBin.status, 0, viaBin.stderr);
        assert.deepEqual(JSON.parse(viaBin.stdout), body);
    },
);

test("an error under --json has the same envelope, ok:false", { timeout: 60_000 }, async () => {
    const r = await runCli(env, ["--cwd", project.dir, "--stack", "nosuchstack", "--json", "outputs"]);
    assert.equal(r.code, 2, r.stderr);
    const body = JSON.parse(r.stdout);
    assert.equal(body.ok, false);
    assert.equal(typeof body.error.message, "string");
});
