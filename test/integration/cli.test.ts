/** The CLI's contract for bad input: a clear message naming the problem, exit code 2, nothing touched. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PACKAGE_ROOT } from "../../src/engine/env";

const cli = path.join(PACKAGE_ROOT, "dist", "src", "cli.js");
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-cli-"));
fs.mkdirSync(path.join(dir, "stacks"));
fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: egress\nruntime: nodejs\nstackConfigDir: stacks\n");
const stackYaml =
    "# keep this comment\nconfig:\n  egress:providers:\n    local: { type: local }\n  egress:pools:\n    - name: web\n      provider: local\n      replicas: 2\n      maxReplicas: 4\n";
fs.writeFileSync(path.join(dir, "stacks", "Pulumi.t.yaml"), stackYaml);
fs.writeFileSync(
    path.join(dir, "stacks", "Pulumi.bad.yaml"),
    "config:\n  egress:providers:\n    local: { type: local }\n  egress:pools:\n    - { name: web, provider: lokal, replicas: 2 }\n",
);

function run(...args: string[]) {
    return runWith({}, ...args);
}

function runWith(env: Record<string, string>, ...args: string[]) {
    const r = cp.spawnSync(process.execPath, [cli, "--cwd", dir, ...args], {
        encoding: "utf8",
        timeout: 30_000,
        env: { ...process.env, ...env },
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

for (const [value, message] of [
    ["-1", "replicas must be 0 or more (got -1)"],
    ["1.5", "replicas must be a whole number (got 1.5)"],
    ["abc", `replicas must be a whole number (got "abc")`],
    ["5", "replicas must not exceed maxReplicas (4) (got 5)"],
] as const) {
    test(`scale web ${value} → exit 2, "${message}", stack file untouched`, () => {
        const r = run("--stack", "t", "scale", "web", "--", value);
        assert.equal(r.code, 2, r.stderr);
        assert.ok(r.stderr.includes(`egress:pools[0].replicas: ${message}`), r.stderr);
        assert.equal(fs.readFileSync(path.join(dir, "stacks", "Pulumi.t.yaml"), "utf8"), stackYaml);
    });
}

test("scale of an unknown pool names the known pools", () => {
    const r = run("--stack", "t", "scale", "nope", "1");
    assert.equal(r.code, 2);
    assert.match(r.stderr, /has no pool named "nope" \(known: web\)/);
    assert.equal(fs.readFileSync(path.join(dir, "stacks", "Pulumi.t.yaml"), "utf8"), stackYaml);
});

test("--json errors are machine-readable and list the problems", () => {
    const r = run("--stack", "t", "--json", "scale", "web", "--", "-3");
    assert.equal(r.code, 2);
    const body = JSON.parse(r.stdout);
    assert.equal(body.ok, false);
    assert.deepEqual(body.error.problems, [
        { path: "egress:pools[0].replicas", rule: "replicas must be 0 or more", value: -3 },
    ]);
});

test("scale --no-up writes only the replicas, keeping comments", () => {
    const copy = path.join(dir, "stacks", "Pulumi.w.yaml");
    fs.writeFileSync(copy, stackYaml);
    const r = run("--stack", "w", "--json", "scale", "web", "3", "--no-up");
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { ok: true, pool: "web", previous: 2, replicas: 3 });
    assert.equal(fs.readFileSync(copy, "utf8"), stackYaml.replace("replicas: 2", "replicas: 3"));
});

test("up with an invalid config exits 2 naming the path, before the engine runs", () => {
    const r = run("--stack", "bad", "up");
    assert.equal(r.code, 2);
    assert.match(
        r.stderr,
        /egress:pools\[0\]\.provider: must name an entry of egress:providers \(known: local\) \(got "lokal"\)/,
    );
    assert.ok(!fs.existsSync(path.join(dir, ".pulumi")), "no engine state was created");
});

test("destroy without --yes refuses", () => {
    const r = run("--stack", "t", "destroy");
    assert.equal(r.code, 2);
    assert.match(r.stderr, /pass --yes/);
});

test("unknown commands are usage errors; --help exits 0 and lists the commands", () => {
    assert.equal(run("frobnicate").code, 2);
    const help = run("--help");
    assert.equal(help.code, 0);
    for (const c of ["up", "preview", "refresh", "destroy", "outputs", "scale", "doctor"])
        assert.match(help.stdout, new RegExp(`\\n  ${c}\\b`));
});

test("a bad --engine-kill-grace of a writer is a usage error before the store is tried; --help lists exit code 4", () => {
    // A closed port: were the store tried first, this would be exit 75.
    const r = run("--stack", "t", "up", "--store", "redis://127.0.0.1:1", "--engine-kill-grace", "0");
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /--engine-kill-grace must be a number of seconds from 1 to 3600 \(got "0"\)/);
    const env = runWith({ EGRESS_ENGINE_KILL_GRACE: "soon" }, "--stack", "t", "up", "--store", "redis://127.0.0.1:1");
    assert.equal(env.code, 2, env.stderr);
    assert.match(run("--help").stdout, /Exit codes: .*\b4 lost the stack's\s+lock in the store/);
    assert.match(run("up", "--help").stdout, /--engine-kill-grace <seconds>/);
});

test("up with a Kubernetes context missing from the kubeconfig exits 2 naming the path, before the engine runs", () => {
    const kubeconfig = path.join(dir, "kubeconfig.yaml");
    fs.writeFileSync(
        kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:6443'}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: prod, context: {cluster: c, user: u}}]\ncurrent-context: prod\n",
    );
    fs.writeFileSync(
        path.join(dir, "stacks", "Pulumi.k8s.yaml"),
        `config:\n  egress:providers:\n    k8s: { type: kubernetes, context: staging, kubeconfigPath: ${kubeconfig} }\n  egress:pools:\n    - { name: web, provider: k8s, replicas: 1 }\n`,
    );
    const r = run("--stack", "k8s", "up");
    assert.equal(r.code, 2, r.stderr);
    assert.match(
        r.stderr,
        /egress:providers\.k8s\.context: context `staging` is not in .*kubeconfig\.yaml \(known: prod\) \(got "staging"\)/,
    );
});

test("a missing Pulumi CLI is a missing prerequisite: exit 3 and what to run", () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "egress-nohome-"));
    const r = runWith({ EGRESS_HOME: home }, "--stack", "t", "up");
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /the Pulumi CLI is missing from .*: run `npm run setup`/);
});

const bin = path.join(PACKAGE_ROOT, "bin", "egress");

test("--version prints package.json's version, from dist/src/cli.js and from bin/egress", () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, "package.json"), "utf8"));
    const r = run("--version");
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), version);
    const b = cp.spawnSync(bin, ["--version"], { encoding: "utf8", timeout: 30_000 });
    assert.equal(b.status, 0, b.stderr);
    assert.equal(b.stdout.trim(), version);
});

test("bin/egress reports errors as src/cli.ts does: same message, same exit code, same --json envelope", () => {
    for (const args of [
        ["--stack", "bad", "up"],
        ["--stack", "bad", "--json", "up"],
        ["--stack", "t", "scale", "nope", "1"],
        ["frobnicate"],
    ]) {
        const direct = run(...args);
        const viaBin = cp.spawnSync(bin, ["--cwd", dir, ...args], { encoding: "utf8", timeout: 30_000 });
        assert.notEqual(direct.code, 0);
        assert.equal(viaBin.status, direct.code, `${args.join(" ")}: ${viaBin.stderr}`);
        assert.equal(viaBin.stderr, direct.stderr, args.join(" "));
        assert.equal(viaBin.stdout, direct.stdout, args.join(" "));
        assert.doesNotMatch(viaBin.stderr, /\n\s+at /, "no stack trace");
    }
});

test("bin/egress without a build says what to run (exit 3), not a stack trace", () => {
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), "egress-nobuild-"));
    fs.mkdirSync(path.join(copy, "bin"));
    fs.copyFileSync(bin, path.join(copy, "bin", "egress"));
    fs.chmodSync(path.join(copy, "bin", "egress"), 0o755);
    const r = cp.spawnSync(path.join(copy, "bin", "egress"), ["--version"], { encoding: "utf8", timeout: 30_000 });
    fs.rmSync(copy, { recursive: true, force: true });
    assert.equal(r.status, 3, r.stderr);
    assert.equal(r.stderr, "error: egress is not built (dist/src/cli.js is missing): run `npm run build`\n");
});
