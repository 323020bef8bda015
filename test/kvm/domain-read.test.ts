/**
 * Domain `read` against the real sandbox, through the provider loaded as the engine loads it (from the loader in state):
 * it reports libvirt's state, a stopped or missing domain is gone (`running: false`, and diff asks for a
 * replacement), and the serial console goes to a log volume that delete removes.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { baseImageProvider } from "../../components/kvm/base-image";
import { overlayProvider } from "../../components/kvm/overlay";
import { seedDiskProvider } from "../../components/kvm/seed-disk";
import { DOMAIN_TYPE, DomainInputs } from "../../components/kvm/domain";
import { METADATA_NS } from "../../components/kvm/naming";
import { runSerialized } from "../helpers/serialized-provider";
import { providerLoader } from "../../components/shared/dynamic";
import { connection, lv, Sandbox, serveTinyImage, startSandbox, teardown } from "./sandbox";

let sb: Sandbox;
let image: Awaited<ReturnType<typeof serveTinyImage>>;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "egress-kvm-read-"));
before(async () => {
    sb = startSandbox();
    image = await serveTinyImage(work);
});
after(() => teardown({ image, work }));

test(
    "read: running → shut off → paused → running → missing (gone = running: false, diff replaces); delete removes the console log",
    { timeout: 180_000 },
    async () => {
        const conn = connection(sb);
        const base = await baseImageProvider.create!({
            conn,
            privateKey: sb.privateKey,
            storagePool: sb.pool,
            entry: "read",
            key: "tiny",
            url: image.url,
            sha256: image.sha256,
            format: "qcow2",
            volume: "base-read-tiny.qcow2",
        });
        const ov = await overlayProvider.create!({
            conn,
            privateKey: sb.privateKey,
            storagePool: sb.pool,
            volume: "t-read-0-aa.qcow2",
            basePath: base.outs!.path,
            baseFormat: "qcow2",
            capacityBytes: base.outs!.capacityBytes,
        });
        const seed = await seedDiskProvider.create!({
            conn,
            privateKey: sb.privateKey,
            storagePool: sb.pool,
            volume: "t-read-0-seed.iso",
            userData: "#cloud-config\n",
            instanceId: "t-read-0",
            hostname: "read-0",
            installGuestAgent: false,
        });
        const inputs: DomainInputs = {
            conn,
            privateKey: sb.privateKey,
            name: "t-read-0",
            domainType: "qemu",
            vcpu: 1,
            memoryMiB: 128,
            firmware: "bios",
            overlayPath: ov.outs!.path,
            seedPath: seed.outs!.path,
            network: sb.network,
            metadata: { project: "egress", stack: "t", pool: "read", member: "read-0", provider: "lab" },
            metadataNs: METADATA_NS,
            addressTimeoutSeconds: 0,
        };
        const text = providerLoader(DOMAIN_TYPE);
        const [created, r1] = runSerialized(text, [
            { method: "create", args: [inputs] },
            { method: "read", args: ["$id", "$outs"] },
        ]) as any[];
        assert.deepEqual([created.outs.state, created.outs.running], ["running", true]);
        assert.deepEqual([r1.id, r1.props.state, r1.props.running], [created.id, "running", true]);
        const logFile = path.join(sb.poolDir, "t-read-0.console.log");
        assert.match(
            lv(["dumpxml", "t-read-0"]),
            new RegExp(`<log file=['"]${logFile}['"] append=['"]on['"]/>`),
            "serial console logged to a file in the pool",
        );
        assert.ok(fs.existsSync(logFile), "virtlogd created the console log");

        // A known address survives reads of a running domain that finds none; a stopped one is gone.
        lv(["destroy", "t-read-0"]);
        const known = { ...created.outs, ipAddress: "192.0.2.9" };
        const [r2, d2] = runSerialized(text, [
            { method: "read", args: [created.id, known] },
            { method: "diff", args: [created.id, { ...known, state: "shut off", running: false }, inputs] },
        ]) as any[];
        assert.deepEqual([r2.id, r2.props.state, r2.props.running], [created.id, "shut off", false]);
        assert.deepEqual([d2.replaces, d2.deleteBeforeReplace], [["running"], true]);

        lv(["start", "t-read-0"]);
        lv(["suspend", "t-read-0"]);
        const [r3] = runSerialized(text, [{ method: "read", args: [created.id, known] }]) as any[];
        assert.deepEqual([r3.props.state, r3.props.running], ["paused", false]);
        lv(["resume", "t-read-0"]);
        const [r4] = runSerialized(text, [{ method: "read", args: [created.id, known] }]) as any[];
        assert.deepEqual(
            [r4.props.state, r4.props.running, r4.props.ipAddress],
            ["running", true, "192.0.2.9"],
            "a lookup finding nothing keeps the address",
        );

        lv(["destroy", "t-read-0"]);
        lv(["undefine", "--nvram", "t-read-0"]);
        const [r5] = runSerialized(text, [{ method: "read", args: [created.id, known] }]) as any[];
        assert.deepEqual(
            [r5.id, r5.props.state, r5.props.running],
            [created.id, "missing", false],
            "a missing domain stays in state, reported gone",
        );

        // Recreate, then delete: the console log goes with the domain; a second delete is fine.
        const [again] = runSerialized(text, [{ method: "create", args: [inputs] }]) as any[];
        assert.equal(again.outs.state, "running");
        runSerialized(text, [
            { method: "delete", args: [again.id, again.outs] },
            { method: "delete", args: [again.id, again.outs] },
        ]);
        assert.doesNotMatch(lv(["list", "--all", "--name"]), /t-read-0/);
        assert.equal(fs.existsSync(logFile), false, "console log removed with the domain");

        // A guest that never gets an address (this blank disk boots nothing) fails its create with the tail of
        // its serial console (OVMF's boot attempts), and leaves neither domain nor log behind.
        const t0 = Date.now();
        assert.throws(
            () =>
                runSerialized(text, [
                    { method: "create", args: [{ ...inputs, firmware: "uefi", addressTimeoutSeconds: 20 }] },
                ]),
            (e: Error) => {
                assert.match(
                    e.message,
                    /domain t-read-0 on host sandbox has no address after 20 s \(addressTimeoutSeconds; no source answered: guest agent, ARP, DHCP lease\)\. Last lines of its serial console:\n\S/,
                );
                console.log(
                    `no-address create failed after ${Date.now() - t0} ms; console tail: ${JSON.stringify(e.message.split("serial console:\n")[1]?.slice(0, 300))}`,
                );
                return true;
            },
        );
        assert.doesNotMatch(lv(["list", "--all", "--name"]), /t-read-0/);
        assert.equal(fs.existsSync(logFile), false, "console log removed with the failed domain");

        await seedDiskProvider.delete!(seed.id, seed.outs!);
        await overlayProvider.delete!(ov.id, ov.outs!);
        await baseImageProvider.delete!(base.id, base.outs!);
    },
);
