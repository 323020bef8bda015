/**
 * Provider plugins: egress leaves automatic acquisition to the caller's environment (on for users, off in
 * tests and CI), and `egress doctor` names the exact install command for the plugin the installed SDK pins.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { engineEnv, engineHome, PACKAGE_ROOT } from "../../src/engine/env";
import { childEnv } from "../../src/engine/child-env";

const VAR = "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION";
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "egress-plugins-"));
const home = { ...engineHome({ EGRESS_HOME: path.join(tmp, "home") }) };

/** What the engine process gets: the allow-listed caller environment, then egress's settings (supervised.ts). */
const engineProcessEnv = (caller: NodeJS.ProcessEnv) => ({ ...childEnv(caller), ...engineEnv(home, caller) });

test("egress does not set plugin acquisition itself: the caller's value reaches the engine either way", () => {
    assert.equal(engineEnv(home, { PATH: "/usr/bin" })[VAR], undefined);
    assert.equal(engineProcessEnv({ PATH: "/usr/bin" })[VAR], undefined, "on by default, as Pulumi ships it");
    assert.equal(engineProcessEnv({ PATH: "/usr/bin", [VAR]: "true" })[VAR], "true");
    assert.equal(engineProcessEnv({ PATH: "/usr/bin", [VAR]: "false" })[VAR], "false");
});

const sdk = (kind: string) =>
    JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, "node_modules", "@pulumi", kind, "package.json"), "utf8"))
        .version as string;
const pinned = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, "package.json"), "utf8")).dependencies as Record<
    string,
    string
>;

// A project with both remote kinds, so doctor checks both plugins.
const dir = path.join(tmp, "project");
fs.mkdirSync(path.join(dir, "stacks"), { recursive: true });
fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: egress\nruntime: nodejs\nstackConfigDir: stacks\n");
const kubeconfig = path.join(dir, "kubeconfig.yaml");
fs.writeFileSync(
    kubeconfig,
    "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:6443'}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: kind, context: {cluster: c, user: u}}]\ncurrent-context: kind\n",
);
fs.writeFileSync(
    path.join(dir, "stacks", "Pulumi.p.yaml"),
    `config:
  egress:providers:
    gcp-eu: { type: gcp, project: crawl-proxies, zones: [europe-west1-b], allowedSourceRanges: [203.0.113.0/24] }
    k8s: { type: kubernetes, context: kind, kubeconfigPath: ${kubeconfig} }
  egress:pools:
    - { name: g, provider: gcp-eu, replicas: 1, auth: { username: crawler, password: doctor-test-password-0123 } }
    - { name: k, provider: k8s, replicas: 1 }
`,
);
const pulumiHome = path.join(tmp, "pulumi-home");

function doctor(env: Record<string, string>): Map<string, { ok: boolean; detail: string; fix?: string }> {
    const base: NodeJS.ProcessEnv = {
        ...process.env,
        EGRESS_HOME: home.dir,
        PULUMI_HOME: pulumiHome,
        PULUMI_CONFIG_PASSPHRASE: "x",
    };
    delete base[VAR];
    const r = cp.spawnSync(
        process.execPath,
        [path.join(PACKAGE_ROOT, "dist", "src", "cli.js"), "--cwd", dir, "--stack", "p", "--json", "doctor"],
        { encoding: "utf8", env: { ...base, ...env }, timeout: 30_000 },
    );
    const body = JSON.parse(r.stdout);
    return new Map(body.findings.map((f: { check: string }) => [f.check, f]));
}

test("the SDK versions doctor reads are the ones package.json pins", () => {
    assert.equal(sdk("gcp"), pinned["@pulumi/gcp"]);
    assert.equal(sdk("kubernetes"), pinned["@pulumi/kubernetes"]);
});

test("offline, doctor fails a missing plugin and prints the exact install command", () => {
    const f = doctor({ [VAR]: "true" });
    for (const kind of ["gcp", "kubernetes"]) {
        const finding = f.get(`${kind}: provider plugin ${sdk(kind)}`);
        assert.ok(finding, `a finding for ${kind} (got ${[...f.keys()].join(", ")})`);
        assert.equal(finding.ok, false);
        assert.ok(finding.fix?.includes(`pulumi plugin install resource ${kind} ${sdk(kind)}`), finding.fix);
        assert.ok(finding.fix?.includes(`PULUMI_HOME=${pulumiHome} `), finding.fix);
    }
});

test("online, a missing plugin is fine (the engine fetches it) and the command is still named", () => {
    const f = doctor({});
    const finding = f.get(`gcp: provider plugin ${sdk("gcp")}`)!;
    assert.equal(finding.ok, true);
    assert.match(finding.detail, /downloads it on first use/);
    assert.ok(finding.detail.includes(`plugin install resource gcp ${sdk("gcp")}`), finding.detail);
});

test("an installed plugin of the pinned version passes; another version does not count", () => {
    fs.mkdirSync(path.join(pulumiHome, "plugins", `resource-kubernetes-v${sdk("kubernetes")}`), { recursive: true });
    fs.mkdirSync(path.join(pulumiHome, "plugins", "resource-gcp-v1.0.0"), { recursive: true });
    const f = doctor({ [VAR]: "true" });
    assert.equal(f.get(`kubernetes: provider plugin ${sdk("kubernetes")}`)!.ok, true);
    assert.equal(f.get(`gcp: provider plugin ${sdk("gcp")}`)!.ok, false);
});

test("a plugin on PATH is what the engine uses; egress's test build there is refused for a real cluster", () => {
    const put = (d: string) => {
        fs.mkdirSync(d, { recursive: true });
        fs.writeFileSync(path.join(d, "pulumi-resource-kubernetes"), "#!/bin/sh\n", { mode: 0o755 });
        return d;
    };
    const own = put(path.join(tmp, "opt", "bin"));
    const mine = doctor({ [VAR]: "true", PATH: `${own}:${process.env.PATH}` }).get(
        `kubernetes: provider plugin ${sdk("kubernetes")}`,
    )!;
    assert.deepEqual([mine.ok, mine.detail], [true, `the engine uses ${own}/pulumi-resource-kubernetes from PATH`]);
    const testBuild = put(path.join(tmp, "cache", "egress-k8s", "0123456789abcdef", "bin"));
    const f = doctor({ [VAR]: "true", PATH: `${testBuild}:${process.env.PATH}` }).get(
        `kubernetes: provider plugin ${sdk("kubernetes")}`,
    )!;
    assert.equal(f.ok, false);
    assert.match(f.detail, /egress's test build \(scripts\/build-k8s\.sh/);
    assert.ok(
        f.fix?.startsWith(
            `for a real cluster, take ${testBuild} off PATH and install the released plugin: PULUMI_HOME=`,
        ),
        f.fix,
    );
    assert.ok(f.fix?.includes(`plugin install resource kubernetes ${sdk("kubernetes")}`), f.fix);
});

test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));
