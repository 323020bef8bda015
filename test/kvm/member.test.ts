/**
 * The KVM member and template resources (components/kvm/member-provider.ts, member-template.ts) against
 * the libvirt sandbox, called directly with the key given as the engine gives it (the stack's config in
 * `configure`): create reads the template on the host and makes overlay, seed and domain; a second create
 * of the same member adopts the running domain (what a hand-over relies on); read notices a stopped
 * domain; delete removes the domain and both volumes; a killed create is undone by name through the
 * kind's undos, given the config as recovery gives it.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { baseImageProvider } from "../../components/kvm/base-image";
import { kvmMemberProvider, KvmMemberInputs, KvmMemberOutputs } from "../../components/kvm/member-provider";
import { KvmTemplate, templateProvider } from "../../components/kvm/member-template";
import { installationPrefix, METADATA_NS, templateVolumeName } from "../../components/kvm/naming";
import { setKvmProvidersConfig } from "../../components/kvm/stack-config";
import { pendingCreateUndoers } from "../../components/registry";
import { TEST_INSTALLATION } from "../helpers/installation";
import { isoFile, kvmEntry, lv, Sandbox, serveTinyImage, startSandbox, teardown } from "./sandbox";

let sb: Sandbox;
let image: Awaited<ReturnType<typeof serveTinyImage>>;
let base: { id: string; outs: { path: string; capacityBytes: number } };
const work = fs.mkdtempSync(path.join(os.tmpdir(), "egress-kvm-member-"));
const prefix = installationPrefix(TEST_INSTALLATION.id);
const at = { entry: "mem", host: "sandbox" };
let providers = "";

before(async () => {
    sb = startSandbox();
    image = await serveTinyImage(work);
    const entry = kvmEntry(sb, { url: image.url, sha256: image.sha256 });
    providers = JSON.stringify({ mem: entry });
    setKvmProvidersConfig({ mem: entry });
    const made = await baseImageProvider.create!({
        conn: { host: "sandbox", user: "root", address: "127.0.0.1", port: sb.sshPort, knownHosts: sb.knownHosts },
        privateKey: sb.privateKey,
        storagePool: sb.pool,
        entry: "mem",
        key: "tiny",
        url: image.url,
        sha256: image.sha256,
        format: "qcow2",
        volume: "base-mem-tiny.qcow2",
    });
    base = { id: made.id, outs: made.outs! };
});
after(async () => {
    if (base) await baseImageProvider.delete!(base.id, base.outs as any);
    await teardown({ image, work });
});

/** A template for pool `mt` with this user-data, written to the host; returns its inputs and outputs. */
async function template(userData: string) {
    const content: KvmTemplate = {
        prefix,
        storagePool: sb.pool,
        base: {
            volume: "base-mem-tiny.qcow2",
            path: base.outs.path,
            format: "qcow2",
            capacityBytes: base.outs.capacityBytes,
        },
        domain: {
            domainType: "qemu",
            vcpu: 1,
            memoryMiB: 128,
            firmware: "uefi",
            bridge: sb.bridge,
            metadataNs: METADATA_NS,
            metadata: {
                project: "egress",
                stack: "t",
                pool: "mt",
                provider: "mem",
                installation: TEST_INSTALLATION.id,
            },
        },
        seed: { userData, installGuestAgent: false },
    };
    const inputs = { at, volume: templateVolumeName(prefix, "mt", "0123abcd"), content: JSON.stringify(content) };
    const made = await templateProvider.create!(inputs);
    return { inputs, id: made.id, outs: made.outs! };
}

const memberIn = (name: string, tpl: string): KvmMemberInputs => ({ member: { ...at, name, tpl, wait: 0 } });
const runId = (d: string) => lv(["domid", d]).trim();
const volumes = () =>
    fs
        .readdirSync(sb.poolDir)
        .filter((f) => f.startsWith(prefix))
        .sort();

test("create, adopt, read, delete: one resource is the domain and its two disks", { timeout: 300_000 }, async () => {
    const tpl = await template("#cloud-config\nhostname: from-template\n");
    const made = await kvmMemberProvider.create!(memberIn("mt-0", tpl.inputs.volume));
    const domain = `${prefix}mt-0`;
    const [host, overlay, seed] = made.id.split(",");
    assert.equal(host, `sandbox/${domain}`);
    assert.match(overlay, new RegExp(`^${sb.pool}/${domain}-[0-9a-f]{8}\\.qcow2$`));
    assert.match(seed, new RegExp(`^${sb.pool}/${domain}-[0-9a-f]{8}-seed\\.iso$`));
    assert.match(lv(["domstate", domain]), /running/);
    const seedFile = path.join(sb.poolDir, seed.split("/")[1]);
    assert.equal(isoFile(seedFile, "user-data", work).toString(), "#cloud-config\nhostname: from-template\n");
    assert.match(isoFile(seedFile, "meta-data", work).toString(), /hostname: "mt-0"/);
    const outs = made.outs as KvmMemberOutputs;
    assert.equal(JSON.stringify(outs).includes("PRIVATE KEY"), false, "no key in the outputs");

    // The same member created again (a hand-over): the running domain on its disks is adopted, not restarted.
    const uuid = lv(["domuuid", domain]).trim();
    const id0 = runId(domain);
    const again = await kvmMemberProvider.create!(memberIn("mt-0", tpl.inputs.volume));
    assert.equal(again.id, made.id);
    assert.deepEqual([lv(["domuuid", domain]).trim(), runId(domain)], [uuid, id0], "adopted as it runs");

    // A stopped domain is gone to a read, and the diff then replaces it.
    lv(["destroy", domain]);
    const read = await kvmMemberProvider.read!(made.id, outs);
    assert.equal((read.props as KvmMemberOutputs).gone, true);
    const diff = await kvmMemberProvider.diff!(
        made.id,
        read.props as KvmMemberOutputs,
        memberIn("mt-0", tpl.inputs.volume),
    );
    assert.deepEqual(diff.replaces, ["running"]);
    // Not running: a create does not adopt it, it makes it anew (same names, new run).
    await kvmMemberProvider.create!(memberIn("mt-0", tpl.inputs.volume));
    assert.match(lv(["domstate", domain]), /running/);

    await kvmMemberProvider.delete!(made.id, outs);
    assert.throws(() => lv(["domstate", domain]), "the domain is gone");
    assert.deepEqual(
        volumes().filter((v) => v.startsWith(`${prefix}mt-0`)),
        [],
        "both disks (and the console log) are gone",
    );
    await templateProvider.delete!(tpl.id, tpl.outs);
    assert.deepEqual(volumes(), [], "the template is gone");
});

test(
    "a killed member create is undone by name with the key from the stack's config; one that runs on its disks is kept for adoption",
    { timeout: 300_000 },
    async () => {
        const tpl = await template("#cloud-config\n");
        await kvmMemberProvider.create!(memberIn("mt-1", tpl.inputs.volume));
        const made = volumes().filter((v) => !v.endsWith(".console.log"));
        assert.equal(made.length, 3, `overlay, seed, template: ${made.join(" ")}`);
        // What recovery does with the pending creates (newest first): member, then template.
        setKvmProvidersConfig(undefined); // recovery runs outside the engine: it passes the config itself
        const undo = pendingCreateUndoers();
        const T = (t: string) => `pulumi-nodejs:dynamic/egress:kvm:${t}`;
        const member = { ...memberIn("mt-1", tpl.inputs.volume) } as unknown as Record<string, unknown>;
        const domain = `${prefix}mt-1`;
        // A create killed once its domain ran on its own disks: the domain stays, for the next create to adopt
        // (a hand-over's adoption killed midway must not stop the guest it promised to keep).
        assert.deepEqual(await undo[T("Member")](member, TEST_INSTALLATION, providers), [
            `kept domain ${domain} on sandbox: it runs on its own disks, and the next create adopts it`,
        ]);
        assert.match(lv(["domstate", domain]), /running/);
        // Killed before its domain ran (here: stopped): the domain and both disks go, then the template.
        lv(["destroy", domain]);
        const lines = [
            ...(await undo[T("Member")](member, TEST_INSTALLATION, providers)),
            ...(await undo[T("Template")](
                tpl.inputs as unknown as Record<string, unknown>,
                TEST_INSTALLATION,
                providers,
            )),
        ];
        assert.equal(lines.length, 4, lines.join("\n"));
        assert.match(lines[0], new RegExp(`^removed domain ${domain} \\(shut off\\) on sandbox$`));
        assert.match(lines[3], /^removed member template /);
        assert.deepEqual(volumes(), [], "nothing of the member or its template is left");
        assert.deepEqual(
            await undo[T("Member")](member, TEST_INSTALLATION, providers),
            [],
            "a second pass finds nothing",
        );
        setKvmProvidersConfig(JSON.parse(providers));
    },
);
