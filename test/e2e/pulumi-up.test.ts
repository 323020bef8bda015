/**
 * Plain `pulumi up` on a `runtime: nodejs` project, as a person would type it: the real CLI from
 * .egress/bin launches egress's own pulumi-language-nodejs (tools/language-nodejs), which runs the compiled
 * dist/src/program-main.js. No automation API involved.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import YAML from "yaml";
import { engineHome, PACKAGE_ROOT } from "../../src/engine";
import { connectViaProxy, getViaProxy, startTargetServer } from "../helpers/net";
import { pidsMentioning } from "../helpers/project";
import type { ProxyMember } from "../../src/model";

const home = engineHome();
const programMain = path.join(PACKAGE_ROOT, "dist", "src", "program-main.js");
// A stack name of its own: program-main.js derives its project root from its own location, so the
// proxies' pid/log files live in <PACKAGE_ROOT>/.egress/run/local/<stack> (removed in `after`).
const stack = `pulumiup-${process.pid}`;
const stateDir = path.join(home.runDir, "local", stack);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-pulumi-up-"));

const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${home.binDir}${path.delimiter}${process.env.PATH ?? ""}`,
    PULUMI_BACKEND_URL: `file://${path.join(dir, "backend")}`,
    PULUMI_CONFIG_PASSPHRASE: "x",
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    PULUMI_HOME: path.join(dir, "home"),
    NODE_PATH: path.join(PACKAGE_ROOT, "node_modules"),
};
delete env.PULUMI_CONFIG_PASSPHRASE_FILE;
delete env.PULUMI_DEBUG_LANGUAGES;

/** Runs the real `pulumi` CLI in the temp project; throws with its output when it fails. */
function pulumi(...args: string[]): string {
    const r = cp.spawnSync("pulumi", [...args, "--non-interactive"], {
        cwd: dir,
        env,
        encoding: "utf8",
        timeout: 180_000,
    });
    if (r.status !== 0)
        throw new Error(`pulumi ${args.join(" ")} exited ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
    return r.stdout;
}

/** pids of proxy processes whose argv mentions this stack's state dir. */
const proxyPids = () => pidsMentioning(stateDir);

let target: Awaited<ReturnType<typeof startTargetServer>>;

before(async () => {
    for (const bin of ["pulumi", "pulumi-language-nodejs"]) {
        if (!fs.existsSync(path.join(home.binDir, bin)))
            throw new Error(`${bin} is missing from ${home.binDir}: run \`npm run setup\``);
    }
    if (!fs.existsSync(programMain)) throw new Error(`${programMain} is missing: run \`npx tsc -p .\``);
    // egress's own project file, with `main` made absolute so the temp project runs the compiled program.
    const settings = YAML.parse(fs.readFileSync(path.join(PACKAGE_ROOT, "Pulumi.yaml"), "utf8"));
    settings.main = programMain;
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), YAML.stringify(settings));
    fs.mkdirSync(path.join(dir, "stacks"));
    fs.writeFileSync(
        path.join(dir, "stacks", `Pulumi.${stack}.yaml`),
        YAML.stringify({
            config: {
                "egress:providers": { local: { type: "local" } },
                "egress:pools": [{ name: "web", provider: "local", replicas: 2, maxReplicas: 10 }],
            },
        }),
    );
    fs.mkdirSync(path.join(dir, "backend"));
    target = await startTargetServer();
});

after(async () => {
    // Whatever happened, leave no proxies, state files or temp project behind.
    try {
        pulumi("destroy", "--yes", "-s", stack);
    } catch {
        /* already destroyed, or the stack never came up */
    }
    for (const pid of proxyPids()) {
        try {
            process.kill(pid, "SIGKILL");
        } catch {
            /* gone */
        }
    }
    fs.rmSync(stateDir, { recursive: true, force: true });
    await target?.close();
    fs.rmSync(dir, { recursive: true, force: true });
});

test(
    "plain `pulumi up` / `stack output` / `destroy` through egress's language host",
    { timeout: 300_000 },
    async () => {
        pulumi("stack", "init", stack);
        const up = pulumi("up", "--yes", "--skip-preview", "-s", stack);
        assert.match(up, /created/, up);

        const proxies = JSON.parse(pulumi("stack", "output", "proxies", "--json", "-s", stack)) as ProxyMember[];
        assert.deepEqual(
            proxies.map((p) => p.id),
            ["web-0", "web-1"],
        );
        for (const p of proxies) {
            assert.equal(p.host, "127.0.0.1");
            assert.equal(p.url, `http://127.0.0.1:${p.port}`);
            const plain = await getViaProxy(p.port, `http://127.0.0.1:${target.port}/${p.id}`);
            assert.deepEqual(plain, { status: 200, body: `hello /${p.id}` });
        }
        const tunnel = await connectViaProxy(proxies[0].port, target.port, "/tunnel");
        assert.deepEqual(tunnel, { connectStatus: 200, body: "hello /tunnel" });
        assert.equal(proxyPids().length, 2, "one process per proxy");

        // The program read the stack's state itself (no driver): a fresh installation id, recorded at the
        // first `up` and kept by the next one, which changes nothing.
        const installation = JSON.parse(pulumi("stack", "output", "installation", "--json", "-s", stack)) as string;
        assert.match(installation, /^[0-9a-f]{8}$/);
        const again = pulumi("up", "--yes", "--skip-preview", "-s", stack);
        assert.doesNotMatch(again, /created|replaced|deleted|updated/, again);
        assert.equal(JSON.parse(pulumi("stack", "output", "installation", "--json", "-s", stack)), installation);

        pulumi("destroy", "--yes", "-s", stack);
        assert.deepEqual(proxyPids(), [], "no proxy processes left");
        const leftovers = fs.existsSync(stateDir) ? fs.readdirSync(stateDir) : [];
        assert.deepEqual(leftovers, [], "no pid or log files left");
        assert.deepEqual(JSON.parse(pulumi("stack", "output", "--json", "-s", stack)), {}, "no outputs after destroy");
    },
);

test(
    "plain `pulumi up` on a shard stack (`membersPerStack`) runs the same program over that shard's members, as the installation",
    { timeout: 300_000 },
    async () => {
        const file = (s: string) => path.join(dir, "stacks", `Pulumi.${s}.yaml`);
        const doc = YAML.parse(fs.readFileSync(file(stack), "utf8"));
        doc.config["egress:pools"] = [
            { name: "web", provider: "local", replicas: 3, maxReplicas: 10, membersPerStack: 2 },
        ];
        fs.writeFileSync(file(stack), YAML.stringify(doc));
        pulumi("up", "--yes", "--skip-preview", "-s", stack);
        const ids = (s: string) =>
            (JSON.parse(pulumi("stack", "output", "proxies", "--json", "-s", s)) as ProxyMember[]).map((p) => p.id);
        assert.deepEqual(ids(stack), ["web-0", "web-1"], "the installation's stack holds the first 2");
        // As egress makes a shard: the installation's stack file copied (config and salt), the stack created.
        const shard = `${stack}.web.1`;
        fs.copyFileSync(file(stack), file(shard));
        pulumi("stack", "init", shard);
        try {
            pulumi("up", "--yes", "--skip-preview", "-s", shard);
            assert.deepEqual(ids(shard), ["web-2"]);
            const installation = (s: string) =>
                JSON.parse(pulumi("stack", "output", "installation", "--json", "-s", s));
            assert.equal(installation(shard), installation(stack), "the shard records the installation's identity");
            assert.equal(
                proxyPids().length,
                3,
                "its member runs beside the installation stack's, in the same state dir",
            );
        } finally {
            pulumi("destroy", "--yes", "-s", shard);
            pulumi("stack", "rm", "--yes", "-s", shard);
        }
    },
);
