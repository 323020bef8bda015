/**
 * Two installations, one libvirt host (issue 17 §3), driven through the CLI as two users would: two egress
 * homes and projects, each with a stack named `twin` on the same sandbox host, storage pool and provider
 * entry name. Names carry the installation id (components/kvm/naming.ts), so the two never share a domain or
 * volume. `up`, `scale`, a SIGKILLed `up` with its recovery, `gc --delete` and `destroy` in B leave A's
 * domains (same UUIDs: never replaced), disks and outputs as they were. The image is a tiny qcow2 that
 * need not boot (addressTimeoutSeconds 0): this is about names and ownership, not guests.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { installationPrefix } from "../../components/kvm/naming";
import { checkpointPendingCount } from "../../src/engine";
import { cliAsync, engineProcessesOf, procProject, ProcProject, spawnCli } from "../helpers/processes";
import { installationOf } from "../helpers/installation";
import { kvmEntry, lv, Sandbox, serveTinyImage, startSandbox, teardown } from "./sandbox";
import { waitFor } from "../helpers/harness";

const STACK = "twin";
let sb: Sandbox;
let image: Awaited<ReturnType<typeof serveTinyImage>>;
let a: ProcProject;
let b: ProcProject;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "egress-kvm-twin-"));

const config = (replicas: number) => {
    const entry = kvmEntry(sb, image);
    return {
        // A key path, not inline material: the stack file is YAML, where an inline key would have to be a secret.
        "egress:providers": {
            lab: { ...entry, ssh: { user: "root", privateKeyPath: sb.privateKeyPath, knownHosts: sb.knownHosts } },
        },
        "egress:pools": [
            {
                name: "tw",
                provider: "lab",
                replicas,
                maxReplicas: 4,
                port: 3128,
                placement: { zone: "lab", image: "tiny", machineType: "small" },
            },
        ],
    };
};

/** `egress <args>` must succeed. Never spawnSync: the image server the engine downloads from runs in this process. */
async function ok(p: ProcProject, args: string[]): Promise<string> {
    const r = await cliAsync(p, args, 300_000);
    assert.equal(r.code, 0, `egress ${args.join(" ")}: ${r.stderr}\n${r.stdout}`);
    return r.stdout;
}

/** One installation's things on the host: its domains (name → UUID), its volumes, and its outputs. */
async function snapshot(p: ProcProject) {
    const { installation, source } = installationOf(p);
    assert.equal(source, "recorded");
    const prefix = installationPrefix(installation.id);
    const domains: Record<string, string> = {};
    for (const name of lv(["list", "--all", "--name"])
        .split("\n")
        .map((s) => s.trim())
        .filter((n) => n.startsWith(prefix)))
        domains[name] = lv(["domuuid", name]).trim();
    const volumes = fs
        .readdirSync(sb.poolDir)
        .filter((f) => f.startsWith(prefix))
        .sort();
    return { id: installation.id, domains, volumes, proxies: JSON.parse(await ok(p, ["outputs", "--json"])).proxies };
}

let aBefore: Awaited<ReturnType<typeof snapshot>>;
/** A's members are exactly as they were: the same domains (UUIDs), running, the same disks, equal outputs. */
async function assertAUntouched(after: string): Promise<void> {
    const now = await snapshot(a);
    assert.deepEqual(now.domains, aBefore.domains, `${after}: A's domains are the same ones`);
    assert.deepEqual(now.volumes, aBefore.volumes, `${after}: A's disks are all there`);
    assert.deepEqual(now.proxies, aBefore.proxies, `${after}: A's outputs are intact`);
    for (const d of Object.keys(now.domains))
        assert.equal(lv(["domstate", d]).trim(), "running", `${after}: ${d} runs`);
}

before(async () => {
    sb = startSandbox();
    image = await serveTinyImage(work);
    a = procProject(STACK, config(1));
    b = procProject(STACK, config(1));
});
after(async () => {
    for (const p of [b, a]) if (p) await cliAsync(p, ["destroy", "--yes", "--quiet"], 300_000);
    a?.cleanup();
    b?.cleanup();
    await teardown({ image, work });
});

test(
    "two `twin` stacks on one host come up side by side: two ids, two sets of names",
    { timeout: 600_000 },
    async (t) => {
        let t0 = Date.now();
        await ok(a, ["up", "--quiet"]);
        t.diagnostic(`A up (1 member): ${Date.now() - t0} ms`);
        aBefore = await snapshot(a);
        assert.equal(Object.keys(aBefore.domains).length, 1, JSON.stringify(aBefore));
        assert.equal(aBefore.volumes.filter((v) => v.endsWith(".qcow2")).length, 1, "A's overlay");
        t0 = Date.now();
        await ok(b, ["up", "--quiet"]);
        t.diagnostic(`B up (1 member): ${Date.now() - t0} ms`);
        const bNow = await snapshot(b);
        assert.notEqual(bNow.id, aBefore.id, "two installations, two ids");
        assert.deepEqual(
            bNow.proxies.map((x: { id: string }) => x.id),
            aBefore.proxies.map((x: { id: string }) => x.id),
            "the same member ids",
        );
        assert.equal(Object.keys(bNow.domains).length, 1);
        assert.notDeepEqual(Object.keys(bNow.domains), Object.keys(aBefore.domains), "different domain names");
        await assertAUntouched("B's up");
        // One shared base: both stacks' overlays back onto it.
        assert.deepEqual(
            fs.readdirSync(sb.poolDir).filter((f) => f.startsWith("base-lab-tiny")),
            ["base-lab-tiny.qcow2"],
        );
    },
);

test("B's scale 1 → 2 → 1 leaves A alone", { timeout: 600_000 }, async () => {
    await ok(b, ["scale", "tw", "2", "--quiet"]);
    assert.equal(Object.keys((await snapshot(b)).domains).length, 2);
    await assertAUntouched("B's scale to 2");
    await ok(b, ["scale", "tw", "1", "--quiet"]);
    assert.equal(Object.keys((await snapshot(b)).domains).length, 1);
    await assertAUntouched("B's scale to 1");
});

test(
    "a SIGKILLed `up` in B, its recovery and B's `gc --delete` leave A alone; neither gc lists the other's things",
    { timeout: 900_000 },
    async (t) => {
        const bPrefix = installationPrefix(installationOf(b).installation.id);
        b.setReplicas("tw", 3);
        const child = spawnCli(b, ["up", "--quiet"]);
        const exited = new Promise((r) => child.once("exit", r));
        // Killed once B's new member's overlay is on the host: its seed and domain creates are then under way or pending.
        await waitFor(
            "B's new member's overlay",
            () => child.exitCode !== null || fs.readdirSync(sb.poolDir).some((f) => f.startsWith(`${bPrefix}tw-2-`)),
            300_000,
            20,
        );
        assert.equal(child.exitCode, null, "B's up was still running when killed");
        const pid = child.pid!;
        child.kill("SIGKILL");
        await exited;
        await waitFor(
            `engine processes of dead pid ${pid} to end`,
            () => engineProcessesOf(pid).length === 0,
            30_000,
            25,
        );
        t.diagnostic(`pending operations in B's state after the kill: ${checkpointPendingCount(b.backendDir, STACK)}`);
        await assertAUntouched("the kill of B's up");

        b.setReplicas("tw", 1);
        await ok(b, ["up", "--quiet"]); // recovers first: clears the dead run and its pending operations
        assert.equal(checkpointPendingCount(b.backendDir, STACK), 0);
        await assertAUntouched("B's recovery and up");

        const aNames = new Set([...Object.keys(aBefore.domains), ...aBefore.volumes]);
        const dry = JSON.parse(await ok(b, ["gc", "--json"]));
        assert.deepEqual(
            dry.orphans.filter((o: { name: string }) => aNames.has(o.name) || aNames.has(o.name.split("/").pop()!)),
            [],
            "B's gc lists none of A's things",
        );
        t.diagnostic(
            `B's gc found ${dry.orphans.length} orphan(s) of its own: ${dry.orphans.map((o: { type: string; name: string }) => `${o.type}/${o.name}`).join(", ") || "none"}`,
        );
        assert.equal(JSON.parse(await ok(b, ["gc", "--delete", "--json"])).ok, true);
        assert.deepEqual(JSON.parse(await ok(b, ["gc", "--json"])).orphans, [], "B's gc removed its own orphans");
        assert.ok(
            !fs.readdirSync(sb.poolDir).some((f) => f.startsWith(`${bPrefix}tw-2-`)),
            "the killed create's disks are gone",
        );
        await assertAUntouched("B's gc --delete");
        assert.deepEqual(
            JSON.parse(await ok(a, ["gc", "--json"])).orphans,
            [],
            "A's gc lists nothing (B's things are not A's)",
        );
    },
);

test(
    "`destroy` of B leaves A's member running; then A's destroy leaves the host empty of both",
    { timeout: 600_000 },
    async () => {
        const bPrefix = installationPrefix(installationOf(b).installation.id);
        const aPrefix = installationPrefix(aBefore.id);
        await ok(b, ["destroy", "--yes", "--quiet"]);
        const left = (prefix: string) =>
            [
                ...lv(["list", "--all", "--name"])
                    .split("\n")
                    .map((s) => s.trim()),
                ...fs.readdirSync(sb.poolDir),
            ].filter((n) => n.startsWith(prefix));
        assert.deepEqual(left(bPrefix), [], "B left nothing");
        await assertAUntouched("B's destroy");
        assert.ok(
            fs.existsSync(path.join(sb.poolDir, "base-lab-tiny.qcow2")),
            "the shared base stays while A's overlay uses it",
        );
        await ok(a, ["destroy", "--yes", "--quiet"]);
        assert.deepEqual(left(aPrefix), [], "A left nothing");
    },
);
