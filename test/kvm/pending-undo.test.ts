/**
 * Crash recovery for KVM: a member whose creates the engine never recorded (killed mid-update) is found
 * by its deterministic names and removed (domain first, then its volumes), through the same path
 * recovery takes: the kind registry's undos on inputs as `stack export --show-secrets` gives them.
 * A BaseImage create SIGKILLed mid-`vol-upload` leaves a half-written base and our upload marker: the
 * undo removes both, another stack's is never touched, and the create then succeeds.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { baseImageProvider } from "../../components/kvm/base-image";
import { overlayProvider } from "../../components/kvm/overlay";
import { seedDiskProvider } from "../../components/kvm/seed-disk";
import { domainProvider, DomainInputs } from "../../components/kvm/domain";
import { METADATA_NS } from "../../components/kvm/naming";
import { pendingCreateUndoers } from "../../components/registry";
import { plainInputs } from "../../src/engine/recovery";
import * as cp from "node:child_process";
import * as crypto from "node:crypto";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { BaseImageInputs } from "../../components/kvm/base-image";
import { uploadMarkerName } from "../../components/kvm/base-owner";
import { PACKAGE_ROOT } from "../../src/engine/env";
import { connection, lv, Sandbox, serveTinyImage, startSandbox, teardown } from "./sandbox";
import { TEST_INSTALLATION } from "../helpers/installation";
import { sshRelay } from "./relay";

let sb: Sandbox;
let image: Awaited<ReturnType<typeof serveTinyImage>>;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "egress-kvm-undo-"));
before(async () => {
    sb = startSandbox();
    image = await serveTinyImage(work);
});
after(() => teardown({ image, work }));

/** A secret as an export with --show-secrets writes it. */
const exported = (v: string) => ({
    "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
    plaintext: JSON.stringify(v),
});
const T = (t: string) => `pulumi-nodejs:dynamic/egress:kvm:${t}`;

test(
    "pending creates of a domain and its volumes are undone by name, newest first; a second pass finds nothing",
    { timeout: 180_000 },
    async () => {
        const conn = connection(sb);
        const base = await baseImageProvider.create!({
            conn,
            privateKey: sb.privateKey,
            storagePool: sb.pool,
            entry: "undo",
            key: "tiny",
            url: image.url,
            sha256: image.sha256,
            format: "qcow2",
            volume: "base-undo-tiny.qcow2",
        });
        const ovIn = {
            conn,
            privateKey: sb.privateKey,
            storagePool: sb.pool,
            volume: "t-undo-0-aa.qcow2",
            basePath: base.outs!.path,
            baseFormat: "qcow2" as const,
            capacityBytes: base.outs!.capacityBytes,
        };
        const ov = await overlayProvider.create!(ovIn);
        const seedIn = {
            conn,
            privateKey: sb.privateKey,
            storagePool: sb.pool,
            volume: "t-undo-0-seed.iso",
            userData: "#cloud-config\n",
            instanceId: "t-undo-0",
            hostname: "undo-0",
            installGuestAgent: false,
        };
        const seed = await seedDiskProvider.create!(seedIn);
        const domIn: DomainInputs = {
            conn,
            privateKey: sb.privateKey,
            name: "t-undo-0",
            domainType: "qemu",
            vcpu: 1,
            memoryMiB: 128,
            firmware: "uefi",
            overlayPath: ov.outs!.path,
            seedPath: seed.outs!.path,
            bridge: sb.bridge,
            metadata: {
                project: "egress",
                stack: "t",
                pool: "undo",
                member: "undo-0",
                provider: "lab",
                installation: TEST_INSTALLATION.id,
            },
            metadataNs: METADATA_NS,
            addressTimeoutSeconds: 0,
        };
        await domainProvider.create!(domIn);
        assert.match(lv(["domstate", "t-undo-0"]), /running/);

        // What state holds after the kill: three pending creates, in start order, secrets wrapped.
        const pending = [
            { type: T("Overlay"), inputs: { ...ovIn, privateKey: exported(sb.privateKey!) } },
            {
                type: T("SeedDisk"),
                inputs: { ...seedIn, privateKey: exported(sb.privateKey!), userData: exported(seedIn.userData) },
            },
            { type: T("Domain"), inputs: { ...domIn, privateKey: exported(sb.privateKey!) } },
        ];
        const undo = pendingCreateUndoers();
        const lines: string[] = [];
        for (const p of [...pending].reverse())
            lines.push(...(await undo[p.type](plainInputs(p.inputs) as Record<string, unknown>, TEST_INSTALLATION)));
        assert.deepEqual(lines, [
            `removed domain t-undo-0 (running) on ${conn.host}`,
            `removed volume t-undo-0-seed.iso from pool ${sb.pool} on ${conn.host}`,
            `removed volume t-undo-0-aa.qcow2 from pool ${sb.pool} on ${conn.host}`,
        ]);
        assert.throws(() => lv(["domstate", "t-undo-0"]), "the domain is gone");
        const vols = lv(["vol-list", sb.pool]);
        assert.ok(!vols.includes("t-undo-0"), `no volume of the member is left:\n${vols}`);
        for (const p of pending)
            assert.deepEqual(
                await undo[p.type](plainInputs(p.inputs) as Record<string, unknown>, TEST_INSTALLATION),
                [],
                `${p.type}: nothing left to undo`,
            );
        await baseImageProvider.delete!(base.id, base.outs!);
    },
);

/** Volumes of the sandbox pool as libvirt lists them (refreshed). */
const poolVolumes = () => (
    lv(["pool-refresh", sb.pool]),
    lv(["vol-list", "--pool", sb.pool])
        .split("\n")
        .map((l) => l.trim().split(/\s+/)[0])
        .filter(Boolean)
);

test(
    "a SIGKILL mid-vol-upload: the BaseImage undo removes our half-written base and marker, never another stack's; the create then succeeds",
    { timeout: 240_000 },
    async () => {
        // 8 MiB through a relay at 1 MiB/s: the upload takes ~8 s, long enough to be killed in the middle.
        const bytes = crypto.randomBytes(8 * 1024 * 1024);
        const server = http.createServer((_q, r) =>
            r.writeHead(200, { "content-length": String(bytes.length) }).end(bytes),
        );
        await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
        const link = await sshRelay(sb, { bytesPerSecond: 1024 * 1024 });
        const volume = "base-undo-cut.raw";
        const owner = { project: "egress", stack: "undo" };
        const inputs: BaseImageInputs = {
            conn: connection(sb, { port: link.port, knownHosts: link.knownHosts }),
            privateKey: sb.privateKey,
            storagePool: sb.pool,
            entry: "undo",
            key: "cut",
            url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/cut.raw`,
            sha256: crypto.createHash("sha256").update(bytes).digest("hex"),
            format: "raw",
            volume,
            owner,
        };
        try {
            // The create runs in its own process group (node and its virsh), SIGKILLed as a whole mid-upload.
            const script = `require(${JSON.stringify(path.join(PACKAGE_ROOT, "dist/components/kvm/base-image.js"))}).baseImageProvider.create(JSON.parse(process.env.INPUTS)).then(() => process.exit(0), (e) => (console.error(e.message), process.exit(1)))`;
            const child = cp.spawn(process.execPath, ["-e", script], {
                env: { ...process.env, INPUTS: JSON.stringify(inputs) },
                detached: true,
                stdio: "ignore",
            });
            const exited = new Promise((r) => child.on("exit", r));
            const deadline = Date.now() + 60_000;
            while (link.mostUp() < 3 * 1024 * 1024) {
                if (Date.now() > deadline || child.exitCode !== null)
                    throw new Error(`the upload never got going (exit ${child.exitCode}, ${link.mostUp()} bytes up)`);
                await new Promise((r) => setTimeout(r, 50));
            }
            process.kill(-child.pid!, "SIGKILL");
            await exited;
            const marker = uploadMarkerName(volume, owner);
            assert.deepEqual(
                poolVolumes()
                    .filter((v) => v.startsWith(volume))
                    .sort(),
                [volume, marker],
                "the kill left a half-written base and our marker",
            );

            // Another stack's create meets it: not its upload, so left alone, and the message says whose it is.
            const other = { ...inputs, conn: connection(sb), owner: { project: "egress", stack: "other" } };
            await assert.rejects(
                baseImageProvider.create!(other),
                new RegExp(
                    `volume ${volume} exists with sha256 [0-9a-f]{64}, not ${inputs.sha256}, and no overlay uses it: another stack's upload \\(marker ${marker.replace(/\./g, "\\.")}\\), in progress or interrupted`,
                ),
            );
            const undo = pendingCreateUndoers()[T("BaseImage")];
            assert.deepEqual(
                await undo(
                    plainInputs({ ...other, privateKey: exported(sb.privateKey!) }) as Record<string, unknown>,
                    TEST_INSTALLATION,
                ),
                [],
                "another stack's undo touches nothing",
            );
            assert.deepEqual(
                poolVolumes()
                    .filter((v) => v.startsWith(volume))
                    .sort(),
                [volume, marker],
            );

            // Ours, as recovery runs it on the pending create's inputs.
            const ours = { ...inputs, conn: connection(sb) };
            const lines = await undo(
                plainInputs({ ...ours, privateKey: exported(sb.privateKey!) }) as Record<string, unknown>,
                TEST_INSTALLATION,
            );
            assert.equal(lines.length, 2, lines.join("\n"));
            assert.match(
                lines[0],
                new RegExp(
                    `^removed unverified base volume ${volume} \\(an interrupted upload of ours, \\d+ bytes\\) from pool ${sb.pool} on sandbox$`,
                ),
            );
            assert.equal(lines[1], `removed upload marker ${marker} on sandbox`);
            assert.deepEqual(
                poolVolumes().filter((v) => v.startsWith(volume)),
                [],
                "nothing of the upload is left",
            );
            assert.deepEqual(
                await undo(
                    plainInputs({ ...ours, privateKey: exported(sb.privateKey!) }) as Record<string, unknown>,
                    TEST_INSTALLATION,
                ),
                [],
                "a second pass finds nothing",
            );

            // The next create succeeds without help, and leaves no marker.
            const made = await baseImageProvider.create!(ours);
            assert.equal(made.outs!.adopted, false);
            assert.deepEqual(
                poolVolumes().filter((v) => v.startsWith(volume)),
                [volume],
            );
            assert.ok(fs.readFileSync(made.outs!.path).equals(bytes), "the base holds the verified bytes");
            await baseImageProvider.delete!(made.id, made.outs!);
        } finally {
            link.close();
            server.close();
        }
    },
);

test(
    "a kill after our upload verified: the undo keeps the base (adopted next) and removes only the marker",
    { timeout: 120_000 },
    async () => {
        const conn = connection(sb);
        const owner = { project: "egress", stack: "undo" };
        const inputs: BaseImageInputs = {
            conn,
            privateKey: sb.privateKey,
            storagePool: sb.pool,
            entry: "undo",
            key: "done",
            url: image.url,
            sha256: image.sha256,
            format: "qcow2",
            volume: "base-undo-done.qcow2",
            owner,
        };
        const made = await baseImageProvider.create!(inputs);
        // What a kill between the verification and the marker's removal leaves: the marker beside a good base.
        lv(["vol-create-as", sb.pool, uploadMarkerName(inputs.volume, owner), "0", "--format", "raw"]);
        const lines = await pendingCreateUndoers()[T("BaseImage")](
            plainInputs({ ...inputs, privateKey: exported(sb.privateKey!) }) as Record<string, unknown>,
            TEST_INSTALLATION,
        );
        assert.deepEqual(lines, [
            `kept base volume ${inputs.volume} on sandbox: its upload had finished and verifies`,
            `removed upload marker ${uploadMarkerName(inputs.volume, owner)} on sandbox`,
        ]);
        assert.deepEqual(
            poolVolumes().filter((v) => v.startsWith(inputs.volume)),
            [inputs.volume],
        );
        await baseImageProvider.delete!(made.id, made.outs!);
    },
);
