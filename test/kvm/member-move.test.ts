/**
 * Issue 33 for the kvm kind: a member was an Overlay, a SeedDisk and a Domain in state, each keeping the
 * host's connection and SSH key (11.4 KB per member); now it is one member resource
 * (components/kvm/member-provider.ts) whose key comes from the stack's config. A stack made on the libvirt
 * sandbox by the release before (built from history, test/helpers/legacy-release.ts), with the key a
 * Pulumi secret as docs/kvm.md says, is handed over by this tree's first `up` (src/engine/hand-over.ts):
 * the same domains, still running (same uuid, same run id: not restarted), on the same volumes, nothing
 * deleted or replaced, and state without the old resources. Afterwards a second `up` changes nothing,
 * `gc` finds nothing, a scale adds a member, and destroy leaves no domain, member volume or template.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { checkpointResources, engineHome } from "../../src/engine";
import { cliAsync, procProject, ProcProject } from "../helpers/processes";
import { BEFORE_KVM_MEMBER_COMMIT, legacyCliAsync } from "../helpers/legacy-release";
import { KVM_MEMBER_TYPE } from "../../components/kvm/member-provider";
import { kvmEntry, lv, Sandbox, serveTinyImage, startSandbox, teardown } from "./sandbox";

const STACK = "kvm-moved";
let sb: Sandbox;
let image: Awaited<ReturnType<typeof serveTinyImage>>;
let p: ProcProject;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "egress-kvm-move-"));

/** The stack's config without the key, which goes in as a secret (setSecretKey). */
const config = (replicas: number) => {
    const entry = kvmEntry(sb, { url: image.url, sha256: image.sha256 });
    const { privateKey: _, ...ssh } = entry.ssh;
    return {
        "egress:providers": { lab: { ...entry, ssh } },
        "egress:pools": [
            {
                name: "mv",
                provider: "lab",
                replicas,
                maxReplicas: 4,
                port: 3128,
                placement: { zone: "lab", image: "tiny", machineType: "small" },
            },
        ],
    };
};

/** `pulumi config set --secret --path … < key`, as docs/kvm.md tells users. */
function setSecretKey(): void {
    const home = engineHome();
    const pulumi = (args: string[], input?: string) =>
        cp.execFileSync(path.join(home.binDir, "pulumi"), [...args, "--non-interactive"], {
            cwd: p.dir,
            env: { ...p.env, PULUMI_HOME: home.pulumiHome, PULUMI_SKIP_UPDATE_CHECK: "true" },
            encoding: "utf8",
            input,
        });
    pulumi(["stack", "select", STACK, "--create"]);
    pulumi(
        ["config", "set", "--secret", "--path", "egress:providers.lab.ssh.privateKey", "--stack", STACK],
        sb.privateKey,
    );
    const text = fs.readFileSync(path.join(p.dir, "stacks", `Pulumi.${STACK}.yaml`), "utf8");
    assert.ok(!text.includes("PRIVATE KEY") && /secure:/.test(text), `the key is a secret in the stack file:\n${text}`);
}

/** Our domains: name → [uuid, run id] (the run id changes when a domain restarts). */
function domains(prefix: string): Record<string, [string, string]> {
    const names = lv(["list", "--all", "--name"])
        .split("\n")
        .map((s) => s.trim())
        .filter((n) => n.startsWith(prefix));
    return Object.fromEntries(names.map((n) => [n, [lv(["domuuid", n]).trim(), lv(["domid", n]).trim()]]));
}
/** Our volumes in the storage pool; with `logs`, the domains' console logs too. */
const volumes = (prefix: string, logs = false) =>
    fs
        .readdirSync(sb.poolDir)
        .filter((f) => f.startsWith(prefix) && (logs || !f.endsWith(".console.log")))
        .sort();
const resources = () => (checkpointResources(p.backendDir, STACK) ?? []) as { type: string; id?: string }[];
const changesOf = (stdout: string) => JSON.parse(stdout).changes as Record<string, number>;

before(async () => {
    sb = startSandbox();
    image = await serveTinyImage(work);
    p = procProject(STACK, config(2));
    setSecretKey();
});
after(async () => {
    if (p) await cliAsync(p, ["destroy", "--yes", "--quiet"]);
    p?.cleanup();
    await teardown({ image, work });
});

test(
    "a kvm stack of the release before the member resource is handed over: same domains, not restarted, small state",
    { timeout: 1_200_000 },
    async (t) => {
        const made = await legacyCliAsync(p, ["up", "--quiet"], 600_000, BEFORE_KVM_MEMBER_COMMIT);
        assert.equal(made.code, 0, `the old release's up: ${made.stderr}\n${made.stdout}`);
        const domainId = resources().find((r) => r.type.endsWith("egress:kvm:Domain"))!.id!;
        const prefix = domainId.slice(domainId.indexOf("/") + 1).replace(/mv-\d+$/, "");
        const before = domains(prefix);
        const beforeVolumes = volumes(prefix);
        assert.equal(Object.keys(before).length, 2, JSON.stringify(before));
        assert.equal(beforeVolumes.length, 4, beforeVolumes.join(" "));
        const oldBytes = JSON.stringify(resources()).length;

        const up = await cliAsync(p, ["up", "--json"], 600_000);
        assert.equal(up.code, 0, `up: ${up.stderr}\n${up.stdout}`);
        t.diagnostic(`this tree's first up: changes ${JSON.stringify(changesOf(up.stdout))}`);
        assert.match(up.stderr, /handed 6 resource\(s\) of an earlier release's shape over to 2 of this release's/);
        assert.deepEqual(domains(prefix), before, "the same domains (uuid), not restarted (run id)");
        const nowVolumes = volumes(prefix);
        assert.deepEqual(
            nowVolumes.filter((v) => !v.includes("-tpl-")),
            beforeVolumes,
            "the same disks",
        );
        assert.equal(nowVolumes.filter((v) => v.includes("-tpl-")).length, 1, "one template for the pool");
        assert.ok(!changesOf(up.stdout).delete, `nothing deleted: ${up.stdout}`);
        assert.ok(!changesOf(up.stdout).replace, `nothing replaced: ${up.stdout}`);
        const types = resources().map((r) => r.type);
        for (const old of ["Overlay", "SeedDisk", "Domain"])
            assert.ok(!types.includes(`pulumi-nodejs:dynamic/egress:kvm:${old}`), old);
        assert.equal(types.filter((x) => x === KVM_MEMBER_TYPE).length, 2);
        const newBytes = JSON.stringify(resources()).length;
        t.diagnostic(`state: ${oldBytes} bytes before, ${newBytes} after`);
        assert.ok(newBytes < oldBytes / 2, `state shrank: ${oldBytes} → ${newBytes}`);
        const text = fs.readFileSync(path.join(p.backendDir, ".pulumi", "stacks", "egress", `${STACK}.json`), "utf8");
        assert.ok(!text.includes("PRIVATE KEY"), "the key is in state only as a secret");

        const gc = await cliAsync(p, ["gc", "--json"]);
        assert.equal(gc.code, 0, gc.stderr);
        assert.deepEqual(JSON.parse(gc.stdout).orphans, [], gc.stdout);

        const again = await cliAsync(p, ["up", "--json"]);
        assert.equal(again.code, 0, again.stderr);
        // The tiny image never boots, so each `up` looks once more for the two members' addresses (an update).
        const steady = changesOf(again.stdout);
        assert.deepEqual([Object.keys(steady).sort(), steady.update], [["same", "update"], 2], again.stdout);
        assert.doesNotMatch(again.stderr, /handed/);

        p.setReplicas("mv", 3);
        const scaled = await cliAsync(p, ["up", "--json"], 600_000);
        assert.equal(scaled.code, 0, scaled.stderr);
        const three = domains(prefix);
        assert.equal(Object.keys(three).length, 3);
        for (const [name, ids] of Object.entries(before)) assert.deepEqual(three[name], ids, name);

        const gone = await cliAsync(p, ["destroy", "--yes", "--json"], 600_000);
        assert.equal(gone.code, 0, gone.stderr);
        assert.deepEqual(domains(prefix), {});
        assert.deepEqual(volumes(prefix, true), [], "no member volume, console log or template is left");
    },
);
