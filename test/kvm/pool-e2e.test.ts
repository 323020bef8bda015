/**
 * End to end on the real engine and a real libvirtd (TCG) over SSH: a pool of 2 KvmProxies from a small
 * base image served on loopback → libvirt's view → scale to 1 → changed sha256 refused, nothing deleted
 * → destroy leaves no domains or member volumes.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { tempProject } from "../helpers/project";
import { installationPrefix, memberObjectNames } from "../../components/kvm/naming";
import { GUEST_AGENT_SCRIPT } from "../../components/kvm/seed-iso";
import { isoFile, isoLabel, kvmEntry, lv, Sandbox, serveTinyImage, startSandbox, teardown } from "./sandbox";

const STACK = "kvm-e2e";
const CLOUD_INIT =
    "#cloud-config\npackages: [squid]\nwrite_files:\n  - path: /etc/squid/conf.d/egress.conf\n    content: |\n      http_port 3128\n      visible_hostname egress\n";
let sb: Sandbox;
let image: Awaited<ReturnType<typeof serveTinyImage>>;
let project: ReturnType<typeof tempProject>;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "egress-kvm-e2e-"));

const config = (replicas: number, sha256 = image.sha256, memoryMiB = 128) => {
    const entry = kvmEntry(sb, { url: image.url, sha256 }, { machineTypes: { small: { vcpu: 1, memoryMiB } } });
    return {
        "egress:providers": { lab: entry },
        "egress:pools": [
            {
                name: "kp",
                provider: "lab",
                replicas,
                maxReplicas: 4,
                port: 3128,
                placement: { zone: "lab", image: "tiny", machineType: "small" },
                cloudInit: { file: "cloud-init/squid.yaml" },
            },
        ],
    };
};
/** The stack's installation id (its names carry it), read after the first `up`. */
let installation = "";
let prefix = "";
const ours = () =>
    lv(["list", "--all", "--name"])
        .split("\n")
        .map((s) => s.trim())
        .filter((n) => n.startsWith(prefix));
const memberVolumes = () => fs.readdirSync(sb.poolDir).filter((f) => f.startsWith(prefix));

before(async () => {
    sb = startSandbox();
    console.log(`sandbox setup ${sb.setupMs} ms`);
    image = await serveTinyImage(work);
    project = tempProject(STACK, config(2));
    fs.mkdirSync(path.join(project.dir, "cloud-init"));
    fs.writeFileSync(path.join(project.dir, "cloud-init", "squid.yaml"), CLOUD_INIT);
});
after(() => teardown({ project, image, work }));

test("pool of 2 → libvirt view → scale 1 → changed sha refused → destroy", { timeout: 600_000 }, async () => {
    let t0 = Date.now();
    await project.driver.up();
    installation = (await project.driver.installation()).installation.id;
    prefix = installationPrefix(installation);
    console.log(`up (2 members) ${Date.now() - t0} ms`);
    let proxies = await project.driver.proxies();
    assert.deepEqual(
        proxies.map((p) => [p.id, p.kind, p.port, p.zone, p.host]),
        [
            ["kp-0", "kvm", 3128, "lab", ""],
            ["kp-1", "kvm", 3128, "lab", ""],
        ],
    );

    const names = [0, 1].map((i) => memberObjectNames(installation, `kp-${i}`));
    assert.deepEqual(ours().sort(), names.map((n) => n.domain).sort());
    const basePath = path.join(sb.poolDir, "base-lab-tiny.qcow2");
    for (const n of names) {
        const inactive = lv(["dumpxml", "--inactive", n.domain]);
        assert.match(inactive, /<os firmware=['"]efi['"]>/);
        const disks = [
            ...inactive.matchAll(
                /<disk type=['"](\w+)['"] device=['"](\w+)['"]>[\s\S]*?<source file=['"]([^'"]+)['"]/g,
            ),
        ];
        assert.equal(disks.length, 2);
        for (const [, type] of disks) assert.equal(type, "file");
        const overlay = disks.find((d) => d[2] === "disk")![3];
        const seedIso = disks.find((d) => d[2] === "cdrom")![3];
        assert.match(lv(["vol-dumpxml", overlay]), new RegExp(`<backingStore>[\\s\\S]*<path>${basePath}</path>`));
        assert.equal(isoLabel(seedIso), "cidata");
        assert.deepEqual(isoFile(seedIso, "user-data", work), Buffer.from(CLOUD_INIT), "user-data byte for byte");
        assert.equal(isoFile(seedIso, "vendor-data", work).toString(), GUEST_AGENT_SCRIPT);
        assert.match(isoFile(seedIso, "meta-data", work).toString(), new RegExp(`hostname: "kp-\\d"`));
    }
    // Our resources only: this test's stack file carries the key in clear, and the engine hands the whole
    // stack config to the default provider resource (an operator's file has `{secure: ...}` there).
    const checkpoint = JSON.parse(
        fs.readFileSync(path.join(project.dir, "backend", ".pulumi", "stacks", "egress", `${STACK}.json`), "utf8"),
    );
    checkpoint.checkpoint.latest.resources = checkpoint.checkpoint.latest.resources.filter(
        (r: any) => !r.type.startsWith("pulumi:providers:"),
    );
    const state = JSON.stringify(checkpoint.checkpoint.latest.resources);
    for (const needle of ["PRIVATE KEY", "visible_hostname"]) {
        const at = state.indexOf(needle);
        const where = (checkpoint.checkpoint.latest.resources as any[])
            .filter((r) => JSON.stringify(r).includes(needle))
            .map((r) => `${r.urn} ${Object.keys(r.inputs ?? {})} / ${Object.keys(r.outputs ?? {})}`);
        assert.equal(at, -1, `plaintext ${needle} in state: ${where.join("; ")}`);
    }

    project.writeConfig(config(1));
    t0 = Date.now();
    await project.driver.up();
    console.log(`scale 2 → 1 ${Date.now() - t0} ms`);
    proxies = await project.driver.proxies();
    assert.deepEqual(
        proxies.map((p) => p.id),
        ["kp-0"],
    );
    assert.deepEqual(ours(), [names[0].domain]);
    // kp-1's own volumes (a template's name may hold "kp-1" too: `tpl-kp-1f…`, its digest).
    assert.deepEqual(
        memberVolumes().filter((v) => v.startsWith(`${names[1].domain}-`) || v.startsWith(`${names[1].domain}.`)),
        [],
    );

    project.writeConfig(config(1, "b".repeat(64)));
    await assert.rejects(project.driver.up(), /sha256 changed .*add a new key/);
    assert.deepEqual(ours(), [names[0].domain], "nothing deleted");
    assert.ok(fs.existsSync(basePath), "base kept");
    assert.deepEqual(
        memberVolumes().filter((v) => v.endsWith(".console.log")),
        [`${names[0].domain}.console.log`],
        "kp-0's serial console log",
    );
    const kept = memberVolumes().filter((v) => !v.endsWith(".console.log"));
    assert.equal(kept.filter((v) => !v.includes("-tpl-")).length, 2, `overlay and seed of kp-0 kept: ${kept}`);
    // The pool's member template (components/kvm/member-template.ts): the one in use; none for the refused sha.
    assert.equal(kept.filter((v) => v.includes("-tpl-kp-")).length, 1, `one member template: ${kept}`);

    // A config that makes a new member template (more memory), then a targeted `up` of a new member, as a
    // rolling change's surge runs it: the engine refuses to create the untargeted template the member
    // depends on; the driver makes it alone, then runs again (src/engine/shared-targets.ts). kp-0 is left alone.
    project.writeConfig(config(2, image.sha256, 160));
    const kp0 = (await project.driver.memberTargets(["kp-0"])).found.get("kp-0")!.component;
    await project.driver.up({ target: [kp0.replace(/kp-0$/, "kp-1")], targetDependents: true, refresh: false });
    const maxMemory = (d: string) => /Max memory:\s+(\d+) KiB/.exec(lv(["dominfo", d]))?.[1];
    assert.equal(maxMemory(names[1].domain), String(160 * 1024), "kp-1 made from the new template");
    assert.equal(maxMemory(names[0].domain), String(128 * 1024), "kp-0 untouched");

    project.writeConfig(config(1));
    t0 = Date.now();
    await project.driver.destroy();
    console.log(`destroy ${Date.now() - t0} ms`);
    assert.deepEqual(ours(), []);
    assert.deepEqual(memberVolumes(), []);
    assert.equal(fs.existsSync(basePath), false, "unused base removed with the stack");
    assert.deepEqual(await project.driver.resources(), []);
});
