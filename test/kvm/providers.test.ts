/**
 * The KVM dynamic providers against a real libvirtd (QEMU TCG) reached through sshd with known_hosts
 * verification, called directly (create/diff/update/delete) and once through their serialized form.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { BASE_IMAGE_TYPE, baseImageProvider, BaseImageInputs } from "../../components/kvm/base-image";
import { OVERLAY_TYPE, overlayProvider } from "../../components/kvm/overlay";
import { SEED_DISK_TYPE, seedDiskProvider, SeedDiskInputs } from "../../components/kvm/seed-disk";
import { DOMAIN_TYPE, domainProvider, DomainInputs } from "../../components/kvm/domain";
import { withLibvirt } from "../../components/kvm/libvirt";
import { withNewVolume } from "../../components/kvm/volumes";
import { overlayXml } from "../../components/kvm/xml";
import { GUEST_AGENT_SCRIPT, metaData } from "../../components/kvm/seed-iso";
import { METADATA_NS } from "../../components/kvm/naming";
import { runSerialized } from "../helpers/serialized-provider";
import { providerLoader } from "../../components/shared/dynamic";
import {
    connection,
    isoFile,
    isoLabel,
    lv,
    Sandbox,
    serveTinyImage,
    startSandbox,
    teardown,
    wrongKnownHosts,
} from "./sandbox";

let sb: Sandbox;
let image: Awaited<ReturnType<typeof serveTinyImage>>;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "egress-kvm-prov-"));

before(() => {
    sb = startSandbox();
    console.log(`sandbox setup ${sb.setupMs} ms`);
});
before(async () => {
    image = await serveTinyImage(work);
});
after(() => teardown({ image, work }));

const baseInputs = (over: Partial<BaseImageInputs> = {}): BaseImageInputs => ({
    conn: connection(sb),
    privateKey: sb.privateKey,
    storagePool: sb.pool,
    entry: "prov",
    key: "tiny",
    url: image.url,
    sha256: image.sha256,
    format: "qcow2",
    // Not base-lab-tiny (pool-e2e's, running in parallel): each test file keeps to its own bases.
    volume: "base-prov-tiny.qcow2",
    ...over,
});
const volFile = (name: string) => path.join(sb.poolDir, name);

/** `create`, with outputs known to be there (typed for the rest of the test). */
async function made<I, O>(
    p: { create?: (i: I) => Promise<{ id: string; outs?: O }> },
    inputs: I,
): Promise<{ id: string; outs: O }> {
    const r = await p.create!(inputs);
    return { id: r.id, outs: r.outs! };
}

test("BaseImage: a wrong digest fails before anything reaches the host", { timeout: 60_000 }, async () => {
    await assert.rejects(
        baseImageProvider.create!(baseInputs({ sha256: "0".repeat(64), volume: "base-prov-bad.qcow2" })),
        /has sha256 [0-9a-f]{64} .*config says 0{64}; fix `images.tiny.sha256`/,
    );
    assert.equal(fs.existsSync(volFile("base-prov-bad.qcow2")), false);
});

test("BaseImage, Overlay, SeedDisk, Domain: create, inspect, change, delete", { timeout: 180_000 }, async () => {
    const base = await made(baseImageProvider, baseInputs());
    assert.equal(base.outs.path, volFile("base-prov-tiny.qcow2"));
    assert.deepEqual(
        fs.readFileSync(base.outs.path),
        fs.readFileSync(image.file),
        "published bytes are the verified bytes",
    );
    assert.equal(base.outs.capacityBytes, 16 * 1024 * 1024);

    // A changed digest for the same key: an update (never a replace) that refuses with a clear message.
    const d = await baseImageProvider.diff!(base.id, base.outs, baseInputs({ sha256: "a".repeat(64) }));
    assert.equal(d.changes, true);
    assert.deepEqual(d.replaces, []);
    await assert.rejects(
        baseImageProvider.update!(base.id, base.outs, baseInputs({ sha256: "a".repeat(64) })),
        /sha256 changed .* add a new key to `images`/,
    );
    assert.ok(fs.existsSync(base.outs.path), "base untouched");

    const ov = await made(overlayProvider, {
        conn: connection(sb),
        privateKey: sb.privateKey,
        storagePool: sb.pool,
        volume: "t-prov-0-aa.qcow2",
        basePath: base.outs.path,
        baseFormat: "qcow2",
        capacityBytes: base.outs.capacityBytes,
    });
    assert.match(
        lv(["vol-dumpxml", "--pool", sb.pool, "t-prov-0-aa.qcow2"]),
        new RegExp(`<backingStore>[\\s\\S]*<path>${base.outs.path}</path>`),
    );

    const userData = "#cloud-config\n# bytes: ünïcödé, tabs\t, no trailing newline";
    const seedIn: SeedDiskInputs = {
        conn: connection(sb),
        privateKey: sb.privateKey,
        storagePool: sb.pool,
        volume: "t-prov-0-seed.iso",
        userData,
        instanceId: "t-prov-0-x",
        hostname: "prov-0",
        installGuestAgent: true,
        vendorData: "#cloud-config\nruncmd: [[touch, /tmp/extra]]\n",
    };
    const seed = await made(seedDiskProvider, seedIn);
    assert.equal(isoLabel(seed.outs.path), "cidata");
    assert.deepEqual(
        isoFile(seed.outs.path, "user-data", work),
        Buffer.from(userData, "utf8"),
        "user-data byte for byte",
    );
    assert.equal(
        isoFile(seed.outs.path, "meta-data", work).toString(),
        metaData({ instanceId: "t-prov-0-x", hostname: "prov-0" }),
    );
    const vendor = isoFile(seed.outs.path, "vendor-data", work).toString();
    assert.match(vendor, /^Content-Type: multipart\/mixed/);
    assert.ok(vendor.includes(GUEST_AGENT_SCRIPT) && vendor.includes("touch, /tmp/extra"));
    assert.equal(vendor.match(/Content-Type: text\/plain/g)?.length, 2, "both parts declared text/plain");
    const seedDiff = await seedDiskProvider.diff!(seed.id, seed.outs, { ...seedIn, userData: userData + "\n" });
    assert.deepEqual(seedDiff.replaces, ["userData"]);

    const domIn: DomainInputs = {
        conn: connection(sb),
        privateKey: sb.privateKey,
        name: "t-prov-0",
        domainType: "qemu",
        vcpu: 1,
        memoryMiB: 128,
        firmware: "uefi",
        overlayPath: ov.outs.path,
        seedPath: seed.outs.path,
        bridge: sb.bridge,
        metadata: { project: "egress", stack: "t", pool: "prov", member: "prov-0", provider: "lab" },
        metadataNs: METADATA_NS,
        addressTimeoutSeconds: 0,
    };
    const t0 = Date.now();
    const dom = await made(domainProvider, domIn);
    console.log(`domain define+start ${Date.now() - t0} ms`);
    assert.equal(dom.outs.ipAddress, "");
    const xml = lv(["dumpxml", "--inactive", "t-prov-0"]);
    assert.match(xml, /<os firmware=['"]efi['"]>/);
    assert.match(
        lv(["dumpxml", "t-prov-0"]),
        /<loader[^>]*>\/usr\/share\/OVMF\/OVMF_CODE[^<]*<\/loader>/,
        "libvirt picked OVMF",
    );
    assert.match(xml, /<feature enabled=['"]no['"] name=['"]secure-boot['"]\/>/);
    assert.match(xml, /<acpi\/>/);
    assert.match(
        xml,
        /<disk type=['"]file['"] device=['"]disk['"]>[\s\S]*?<source file=['"][^'"]*t-prov-0-aa\.qcow2['"]/,
    );
    assert.match(
        xml,
        /<disk type=['"]file['"] device=['"]cdrom['"]>[\s\S]*?<target dev=['"]sda['"] bus=['"]scsi['"]\/>/,
    );
    assert.match(xml, /<controller type=['"]scsi['"] index=['"]0['"] model=['"]virtio-scsi['"]/);
    assert.match(xml, /<interface type=['"]bridge['"]>[\s\S]*?<source bridge=['"]egbr0['"]\/>/);
    assert.match(xml, /org\.qemu\.guest_agent\.0/);
    assert.match(xml, /member="prov-0"/);
    assert.match(lv(["domstate", "t-prov-0"]), /running/);

    // Address discovery with nothing booted: still provisioning (update keeps "" and does not throw).
    // Only create waits for an address: update looks once, even with a long addressTimeoutSeconds.
    const t1 = Date.now();
    const upd = await domainProvider.update!(dom.id, dom.outs, { ...domIn, addressTimeoutSeconds: 300 });
    assert.equal(upd.outs!.ipAddress, "");
    assert.ok(Date.now() - t1 < 30_000, `update took ${Date.now() - t1} ms`);
    console.log(`update of an address-less domain ${Date.now() - t1} ms`);
    const rd = await domainProvider.read!(dom.id, { ...dom.outs, ipAddress: "192.0.2.9" });
    assert.equal((rd.props as any).ipAddress, "192.0.2.9", "a read finding nothing keeps the known address");

    // A create meeting a volume of its name that a domain uses never deletes it (e.g. a same-name replace).
    const ovBefore = lv(["vol-dumpxml", "--pool", sb.pool, "t-prov-0-aa.qcow2"]);
    await assert.rejects(
        overlayProvider.create!({ ...ov.outs, capacityBytes: 2 * base.outs.capacityBytes }),
        /volume t-prov-0-aa\.qcow2 already exists .* domain\(s\) t-prov-0 use it; a disk in use is never deleted/,
    );
    assert.equal(lv(["vol-dumpxml", "--pool", sb.pool, "t-prov-0-aa.qcow2"]), ovBefore, "overlay untouched");
    await assert.rejects(
        seedDiskProvider.create!({ ...seedIn, hostname: "other" }),
        /volume t-prov-0-seed\.iso already exists .* t-prov-0 use it/,
    );
    assert.equal(
        isoFile(seed.outs.path, "meta-data", work).toString(),
        metaData({ instanceId: "t-prov-0-x", hostname: "prov-0" }),
        "seed untouched",
    );
    const dd = await domainProvider.diff!(dom.id, dom.outs, { ...domIn, firmware: "bios" });
    assert.deepEqual(dd.replaces, ["firmware"]);
    assert.equal(dd.deleteBeforeReplace, true);

    // Delete everything, twice: the second time everything is already gone.
    for (let i = 0; i < 2; i++) {
        await domainProvider.delete!(dom.id, dom.outs);
        await seedDiskProvider.delete!(seed.id, seed.outs);
        await overlayProvider.delete!(ov.id, ov.outs);
        await baseImageProvider.delete!(base.id, base.outs);
    }
    assert.doesNotMatch(lv(["list", "--all", "--name"]), /t-prov-0/);
    for (const f of ["t-prov-0-aa.qcow2", "t-prov-0-seed.iso", "base-prov-tiny.qcow2"])
        assert.equal(fs.existsSync(volFile(f)), false, f);
    assert.equal(fs.existsSync("/var/lib/libvirt/qemu/nvram/t-prov-0_VARS.fd"), false, "undefine --nvram");
});

test("BaseImage delete keeps a base that overlays still use", { timeout: 60_000 }, async () => {
    const base = await made(baseImageProvider, baseInputs({ volume: "base-prov-keep.qcow2" }));
    const ov = await made(overlayProvider, {
        conn: connection(sb),
        privateKey: sb.privateKey,
        storagePool: sb.pool,
        volume: "t-keep-0.qcow2",
        basePath: base.outs.path,
        baseFormat: "qcow2",
        capacityBytes: base.outs.capacityBytes,
    });
    await baseImageProvider.delete!(base.id, base.outs);
    assert.ok(fs.existsSync(base.outs.path), "still backing t-keep-0");
    // Another resource adopting the same volume verifies its bytes instead of downloading again.
    const again = await made(
        baseImageProvider,
        baseInputs({ volume: "base-prov-keep.qcow2", url: "http://127.0.0.1:9/never" }),
    );
    assert.equal(again.outs.adopted, true);
    await overlayProvider.delete!(ov.id, ov.outs);
    await baseImageProvider.delete!(again.id, again.outs);
    assert.equal(fs.existsSync(base.outs.path), false);
});

test(
    "create paths delete only volumes they created; unused leftovers of ours are replaced",
    { timeout: 120_000 },
    async () => {
        for (const v of ["t-own-0.qcow2", "base-prov-own.qcow2", "base-prov-race.qcow2"])
            fs.rmSync(volFile(v), { force: true });
        lv(["pool-refresh", sb.pool]);
        const base = await made(baseImageProvider, baseInputs({ volume: "base-prov-own.qcow2" }));
        // Someone else's volume of the name we are about to create: vol-create fails, the volume survives.
        lv(["vol-create-as", sb.pool, "t-own-0.qcow2", "1M", "--format", "qcow2"]);
        const before = fs.readFileSync(volFile("t-own-0.qcow2"));
        await assert.rejects(
            withLibvirt(connection(sb), sb.privateKey, (virsh) =>
                withNewVolume(
                    virsh,
                    sb.pool,
                    "t-own-0.qcow2",
                    overlayXml("t-own-0.qcow2", 1 << 20, base.outs.path, "qcow2"),
                    async () => "filled",
                ),
            ),
            /volume t-own-0\.qcow2 appeared in pool .* it was left alone/,
        );
        assert.deepEqual(fs.readFileSync(volFile("t-own-0.qcow2")), before, "not deleted, not overwritten");
        // The same volume, used by no domain, is a leftover for the overlay of that name: replaced.
        const ov = await made(overlayProvider, {
            conn: connection(sb),
            privateKey: sb.privateKey,
            storagePool: sb.pool,
            volume: "t-own-0.qcow2",
            basePath: base.outs.path,
            baseFormat: "qcow2",
            capacityBytes: base.outs.capacityBytes,
        });
        assert.match(
            lv(["vol-dumpxml", "--pool", sb.pool, "t-own-0.qcow2"]),
            new RegExp(`<backingStore>[\\s\\S]*<path>${base.outs.path}</path>`),
        );
        await overlayProvider.delete!(ov.id, ov.outs);

        // Two creates of one base at once (two stacks): whatever the interleaving, the volume ends up
        // holding the verified bytes, and a loser says so instead of deleting the winner's volume.
        const results = await Promise.allSettled(
            [0, 1].map(() => baseImageProvider.create!(baseInputs({ volume: "base-prov-race.qcow2" }))),
        );
        console.log(`concurrent base creates: ${results.map((r) => r.status).join(", ")}`);
        assert.ok(results.some((r) => r.status === "fulfilled"));
        for (const r of results) if (r.status === "rejected") assert.match(String(r.reason), /left alone/);
        assert.deepEqual(fs.readFileSync(volFile("base-prov-race.qcow2")), fs.readFileSync(image.file));
        for (const v of ["base-prov-race.qcow2", "base-prov-own.qcow2"])
            await baseImageProvider.delete!("x", baseInputs({ volume: v }) as any);
        assert.equal(fs.existsSync(volFile("base-prov-race.qcow2")), false);
    },
);

test("wrong host key: clear error, no libvirt session", { timeout: 30_000 }, async () => {
    let ran = false;
    await assert.rejects(
        withLibvirt(connection(sb, { knownHosts: wrongKnownHosts(sb) }), sb.privateKey, async (virsh) => {
            await virsh(["hostname"]);
            ran = true;
        }),
        (e: any) => e.stage === "host-key" && /host key/i.test(e.message) && !e.message.includes("PRIVATE KEY"),
    );
    assert.equal(ran, false);
    await assert.rejects(
        withLibvirt(connection(sb, { knownHosts: "" }), sb.privateKey, async () => undefined),
        /no known_hosts/,
    );
    // An empty known_hosts file: libvirt refuses the unknown key instead of prompting.
    await assert.rejects(
        withLibvirt(connection(sb, { knownHosts: "# nothing\n" }), sb.privateKey, (v) => v(["hostname"])),
        (e: any) => e.stage === "host-key",
    );
});

test("the providers load from their state's loader and run in a fresh process", { timeout: 120_000 }, async () => {
    const text = providerLoader(SEED_DISK_TYPE);
    assert.doesNotMatch(text, /PRIVATE KEY/);
    const inputs: SeedDiskInputs = {
        conn: connection(sb),
        privateKey: sb.privateKey,
        storagePool: sb.pool,
        volume: "t-ser-seed.iso",
        userData: "#cloud-config\n",
        instanceId: "i",
        hostname: "h",
        installGuestAgent: false,
    };
    const [created] = runSerialized(text, [
        { method: "create", args: [inputs] },
        { method: "delete", args: ["$id", "$outs"] },
    ]) as any[];
    assert.equal(created.outs.path, volFile("t-ser-seed.iso"));
    assert.equal(fs.existsSync(volFile("t-ser-seed.iso")), false);
    for (const type of [BASE_IMAGE_TYPE, OVERLAY_TYPE, DOMAIN_TYPE]) {
        runSerialized(providerLoader(type), [{ method: "diff", args: ["x", {}, {}] }]);
    }
});
