/**
 * Issue 18 for the kvm kind: the folder `kinds` became components/, and every dynamic provider's code moved
 * with it. A kvm stack made on the libvirt sandbox by the release before the move (built from history,
 * test/helpers/legacy-release.ts) previews with this tree without a replace, and its `up` keeps the
 * member's domain (same UUID, still running) and disks, handing the member's three resources of that
 * release over to its one member resource (issue 33). The image is a tiny qcow2 that need not boot
 * (addressTimeoutSeconds 0): this is about state and URNs, not guests. Provider code is serialized by value
 * (state names no folder): what the old release left is its code and its state's shapes, which this tree's
 * providers must diff without a replace.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { installationPrefix } from "../../components/kvm/naming";
import { checkpointResources } from "../../src/engine";
import { cliAsync, procProject, ProcProject } from "../helpers/processes";
import { installationOf } from "../helpers/installation";
import { BEFORE_COMPONENTS_COMMIT, legacyCliAsync } from "../helpers/legacy-release";
import { kvmEntry, lv, Sandbox, serveTinyImage, startSandbox, teardown } from "./sandbox";

const STACK = "kvm-moved";
let sb: Sandbox;
let image: Awaited<ReturnType<typeof serveTinyImage>>;
let p: ProcProject;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "egress-kvm-moved-"));

before(async () => {
    sb = startSandbox();
    image = await serveTinyImage(work);
    const entry = kvmEntry(sb, image);
    p = procProject(STACK, {
        // A key path, not inline material: the stack file is YAML, where an inline key would have to be a secret.
        "egress:providers": {
            lab: { ...entry, ssh: { user: "root", privateKeyPath: sb.privateKeyPath, knownHosts: sb.knownHosts } },
        },
        "egress:pools": [
            {
                name: "mv",
                provider: "lab",
                replicas: 1,
                maxReplicas: 2,
                port: 3128,
                placement: { zone: "lab", image: "tiny", machineType: "small" },
            },
        ],
    });
});
after(async () => {
    if (p) await cliAsync(p, ["destroy", "--yes", "--quiet"]);
    p?.cleanup();
    await teardown({ image, work });
});

/** This installation's domains (name → UUID and state) and volumes on the sandbox host. */
function onHost() {
    const prefix = installationPrefix(installationOf(p).installation.id);
    const domains: Record<string, { uuid: string; state: string }> = {};
    for (const name of lv(["list", "--all", "--name"])
        .split("\n")
        .map((s) => s.trim())
        .filter((n) => n.startsWith(prefix)))
        domains[name] = { uuid: lv(["domuuid", name]).trim(), state: lv(["domstate", name]).trim() };
    const volumes = fs
        .readdirSync(sb.poolDir)
        .filter((f) => f.startsWith(prefix))
        .sort();
    return { domains, volumes };
}

/** The provider text (`__provider`: code serialized by value before issue 33, a loader since) of each dynamic resource in state, by URN. */
function providerCode(): Map<string, string> {
    const out = new Map<string, string>();
    for (const r of (checkpointResources(p.backendDir, STACK) ?? []) as { urn: string; inputs?: any }[])
        if (typeof r.inputs?.__provider === "string") out.set(r.urn, r.inputs.__provider);
    return out;
}

/** The operations of a `--json` envelope's `changes` other than `same` and in-place `update`. */
const replacing = (stdout: string): string[] =>
    Object.keys(JSON.parse(stdout).changes as Record<string, number>).filter((op) => op !== "same" && op !== "update");

test(
    "a kvm stack made before components/ moved previews no replace, and `up` keeps its domain",
    { timeout: 900_000 },
    async (t) => {
        let t0 = Date.now();
        let made = await legacyCliAsync(p, ["up", "--quiet"], 300_000, BEFORE_COMPONENTS_COMMIT);
        // That release's serialized KVM provider fails its retry of a dropped libvirt connection with
        // "incompatible receiver" (a module-level Set copied as an object; fixed since, test/unit/
        // serialized-errors). The old release's own bug is not what this test is about: its up goes again once.
        if (made.code !== 0 && /incompatible receiver/.test(made.stderr + made.stdout)) {
            t.diagnostic(
                `the old release's up met its known retry bug; once more: ${made.stderr.trim().split("\n")[0]}`,
            );
            made = await legacyCliAsync(p, ["up", "--quiet"], 300_000, BEFORE_COMPONENTS_COMMIT);
        }
        assert.equal(made.code, 0, `the old release's up: ${made.stderr}\n${made.stdout}`);
        t.diagnostic(`old release: up (1 member) ${Date.now() - t0} ms (its build included on a cold checkout)`);
        const before = onHost();
        assert.equal(Object.keys(before.domains).length, 1, JSON.stringify(before));
        assert.equal(Object.values(before.domains)[0].state, "running");
        const oldCode = providerCode();
        assert.ok(oldCode.size > 0, "the stack has dynamic resources");

        t0 = Date.now();
        const preview = await cliAsync(p, ["preview", "--json"]);
        assert.equal(preview.code, 0, `preview: ${preview.stderr}\n${preview.stdout}`);
        t.diagnostic(
            `this tree: preview ${Date.now() - t0} ms, changes ${JSON.stringify(JSON.parse(preview.stdout).changes)}`,
        );
        // Since issue 33 a member is one resource (components/kvm/member-provider.ts): a preview of a stack an
        // earlier release made shows the member's three resources deleted and its member resource and its
        // pool's template created, as docs/operations.md says (the hand-over happens in `up`). Nothing replaced.
        const previewed = JSON.parse(preview.stdout).changes as Record<string, number>;
        assert.equal(previewed.replace, undefined, preview.stdout);
        assert.deepEqual([previewed.delete, previewed.create], [3, 2], preview.stdout);

        t0 = Date.now();
        const up = await cliAsync(p, ["up", "--json"]);
        assert.equal(up.code, 0, `up: ${up.stderr}\n${up.stdout}`);
        t.diagnostic(`this tree: up ${Date.now() - t0} ms, changes ${JSON.stringify(JSON.parse(up.stdout).changes)}`);
        assert.match(up.stderr, /handed 3 resource\(s\) of an earlier release's shape over to 1 of this release's/);
        assert.deepEqual(replacing(up.stdout), ["create"], up.stdout);
        const after = onHost();
        assert.deepEqual(after.domains, before.domains, "the same domain (UUID), still running");
        assert.deepEqual(
            after.volumes.filter((v) => !v.includes("-tpl-")),
            before.volumes,
            "the same disks, and the pool's template beside them",
        );
        const newCode = providerCode();
        const parts = [...oldCode.keys()].filter((u) => /egress:kvm:(Overlay|SeedDisk|Domain)::/.test(u));
        assert.equal(parts.length, 3, parts.join(" "));
        assert.deepEqual(
            [...newCode.keys()].filter((u) => oldCode.has(u)).sort(),
            [...oldCode.keys()].filter((u) => !parts.includes(u)).sort(),
            "the other URNs stay",
        );
        for (const [urn, code] of newCode)
            assert.match(code, /^exports\.handler=\(\)=>require\("@egress\/providers"\)/, `a loader, no code: ${urn}`);

        // The steady state: a guest that never boots has no address, so each `up` shows the member as an
        // update that looks for it again (components/kvm/member-provider.ts diff). Nothing else changes.
        const again = await cliAsync(p, ["up", "--json"]);
        assert.equal(again.code, 0, again.stderr);
        const steady = JSON.parse(again.stdout).changes;
        t.diagnostic(`this tree: a second up's changes ${JSON.stringify(steady)}`);
        assert.deepEqual(replacing(again.stdout), [], again.stdout);
        assert.equal(steady.update, 1, `only the member's address look-up: ${again.stdout}`);
        assert.deepEqual(onHost(), after, "still the same domain and disks");
    },
);
