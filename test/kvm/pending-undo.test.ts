/**
 * Crash recovery for KVM: a member whose creates the engine never recorded (killed mid-update) is found
 * by its deterministic names and removed (domain first, then its volumes), through the same path
 * recovery takes: the kind registry's undos on inputs as `stack export --show-secrets` gives them.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { baseImageProvider } from "../../kinds/kvm/base-image";
import { overlayProvider } from "../../kinds/kvm/overlay";
import { seedDiskProvider } from "../../kinds/kvm/seed-disk";
import { domainProvider, DomainInputs } from "../../kinds/kvm/domain";
import { METADATA_NS } from "../../kinds/kvm/naming";
import { pendingCreateUndoers } from "../../kinds/registry";
import { plainInputs } from "../../src/engine/recovery";
import { connection, lv, Sandbox, serveTinyImage, startSandbox, teardown } from "./sandbox";
import { TEST_INSTALLATION } from "../helpers/installation";

let sb: Sandbox;
let image: Awaited<ReturnType<typeof serveTinyImage>>;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "egress-kvm-undo-"));
before(async () => {
    sb = startSandbox();
    image = await serveTinyImage(work);
});
after(() => teardown({ image, work }));

/** A secret as an export with --show-secrets writes it. */
const exported = (v: string) => ({ "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", plaintext: JSON.stringify(v) });
const T = (t: string) => `pulumi-nodejs:dynamic/egress:kvm:${t}`;

test("pending creates of a domain and its volumes are undone by name, newest first; a second pass finds nothing", { timeout: 180_000 }, async () => {
    const conn = connection(sb);
    const base = await baseImageProvider.create!({ conn, privateKey: sb.privateKey, storagePool: sb.pool, entry: "undo", key: "tiny", url: image.url, sha256: image.sha256, format: "qcow2", volume: "base-undo-tiny.qcow2" });
    const ovIn = { conn, privateKey: sb.privateKey, storagePool: sb.pool, volume: "t-undo-0-aa.qcow2", basePath: base.outs!.path, baseFormat: "qcow2" as const, capacityBytes: base.outs!.capacityBytes };
    const ov = await overlayProvider.create!(ovIn);
    const seedIn = { conn, privateKey: sb.privateKey, storagePool: sb.pool, volume: "t-undo-0-seed.iso", userData: "#cloud-config\n", instanceId: "t-undo-0", hostname: "undo-0", installGuestAgent: false };
    const seed = await seedDiskProvider.create!(seedIn);
    const domIn: DomainInputs = {
        conn, privateKey: sb.privateKey, name: "t-undo-0", domainType: "qemu", vcpu: 1, memoryMiB: 128, firmware: "uefi",
        overlayPath: ov.outs!.path, seedPath: seed.outs!.path, bridge: sb.bridge,
        metadata: { project: "egress", stack: "t", pool: "undo", member: "undo-0", provider: "lab" }, metadataNs: METADATA_NS, addressTimeoutSeconds: 0,
    };
    await domainProvider.create!(domIn);
    assert.match(lv(["domstate", "t-undo-0"]), /running/);

    // What state holds after the kill: three pending creates, in start order, secrets wrapped.
    const pending = [
        { type: T("Overlay"), inputs: { ...ovIn, privateKey: exported(sb.privateKey!) } },
        { type: T("SeedDisk"), inputs: { ...seedIn, privateKey: exported(sb.privateKey!), userData: exported(seedIn.userData) } },
        { type: T("Domain"), inputs: { ...domIn, privateKey: exported(sb.privateKey!) } },
    ];
    const undo = pendingCreateUndoers();
    const lines: string[] = [];
    for (const p of [...pending].reverse()) lines.push(...(await undo[p.type](plainInputs(p.inputs) as Record<string, unknown>, TEST_INSTALLATION)));
    assert.deepEqual(lines, [
        `removed domain t-undo-0 (running) on ${conn.host}`,
        `removed volume t-undo-0-seed.iso from pool ${sb.pool} on ${conn.host}`,
        `removed volume t-undo-0-aa.qcow2 from pool ${sb.pool} on ${conn.host}`,
    ]);
    assert.throws(() => lv(["domstate", "t-undo-0"]), "the domain is gone");
    const vols = lv(["vol-list", sb.pool]);
    assert.ok(!vols.includes("t-undo-0"), `no volume of the member is left:\n${vols}`);
    for (const p of pending) assert.deepEqual(await undo[p.type](plainInputs(p.inputs) as Record<string, unknown>, TEST_INSTALLATION), [], `${p.type}: nothing left to undo`);
    await baseImageProvider.delete!(base.id, base.outs!);
});
