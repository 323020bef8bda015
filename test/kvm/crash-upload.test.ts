/**
 * The crash matrix's KVM row: a CLI `egress up` SIGKILLed while its BaseImage is in `vol-upload` (the
 * link to the sandbox is a relay at 1 MiB/s, so the 8 MiB upload is caught in the middle). The next
 * `egress up` succeeds without help: recovery's BaseImage undo removes the half-written base and our
 * upload marker, and the create starts over. Before the undo, every later `up` refused the volume.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { baseVolumeName } from "../../components/kvm/naming";
import { uploadMarkerName } from "../../components/kvm/base-owner";
import { cliAsync as runCli, engineProcessesOf, procProject, ProcProject, spawnCli } from "../helpers/processes";
import { installationOf } from "../helpers/installation";
import { kvmEntry, lv, Sandbox, startSandbox, teardown } from "./sandbox";
import { Relay, sshRelay } from "./relay";
import { waitFor } from "../helpers/harness";

const STACK = "kvm-crash-upload";
const IMAGE = crypto.randomBytes(8 * 1024 * 1024);
let sb: Sandbox;
let server: http.Server;
let link: Relay;
let p: ProcProject;
const volume = baseVolumeName("lab", "cut", "raw");
/** Our marker: it carries the installation the killed `up` recorded first (the identity has no dependencies). */
const marker = () =>
    uploadMarkerName(volume, { project: "egress", stack: STACK, installation: installationOf(p).installation.id });
const ofUpload = () => (
    lv(["pool-refresh", sb.pool]),
    lv(["vol-list", "--pool", sb.pool])
        .split("\n")
        .map((l) => l.trim().split(/\s+/)[0])
        .filter((v) => v.startsWith(volume))
        .sort()
);

/** `egress <args>` without blocking this process: the relay the engine talks through runs here. */
const cliAsync = (args: string[]) => runCli(p, args);

before(async () => {
    sb = startSandbox();
    server = http.createServer((_q, r) => r.writeHead(200, { "content-length": String(IMAGE.length) }).end(IMAGE));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    link = await sshRelay(sb, { bytesPerSecond: 1024 * 1024 });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/cut.raw`;
    const entry = kvmEntry(sb, { url, sha256: "0".repeat(64) });
    p = procProject(STACK, {
        "egress:providers": {
            lab: {
                ...entry,
                // A key path, not inline material: the stack file is YAML, where an inline key would have to be a secret.
                ssh: { user: "root", privateKeyPath: sb.privateKeyPath, knownHosts: link.knownHosts },
                hosts: [{ ...entry.hosts[0], port: link.port }],
                images: {
                    cut: {
                        url,
                        sha256: crypto.createHash("sha256").update(IMAGE).digest("hex"),
                        format: "raw",
                        firmware: "uefi",
                    },
                },
            },
        },
        // No members: the base image is made for the placement whatever the replicas.
        "egress:pools": [
            {
                name: "cu",
                provider: "lab",
                replicas: 0,
                maxReplicas: 2,
                port: 3128,
                placement: { zone: "lab", image: "cut", machineType: "small" },
            },
        ],
    });
});
after(async () => {
    if (p) await cliAsync(["destroy", "--yes", "--quiet"]);
    for (const v of ofUpload()) lv(["vol-delete", "--pool", sb.pool, v]);
    link?.close();
    server?.close();
    p?.cleanup();
    await teardown({});
});

test("egress up SIGKILLed mid-vol-upload: the next up succeeds without help", { timeout: 600_000 }, async () => {
    const child = spawnCli(p, ["up"]);
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const exited = new Promise((r) => child.once("exit", r));
    await waitFor(
        `the upload to be under way (${link.mostUp()} bytes up; output so far: ${out.slice(-500)})`,
        () => link.mostUp() > 3 * 1024 * 1024 || child.exitCode !== null,
        300_000,
        50,
    );
    assert.equal(child.exitCode, null, `up was still running when killed: ${out.slice(-2000)}`);
    const pid = child.pid!;
    child.kill("SIGKILL");
    await exited;
    await waitFor(`engine processes of dead pid ${pid} to end`, () => engineProcessesOf(pid).length === 0, 30_000, 25);
    assert.deepEqual(ofUpload(), [volume, marker()].sort(), "the kill left a half-written base and our upload marker");

    const t0 = Date.now();
    const next = await cliAsync(["up"]);
    const ms = Date.now() - t0;
    console.log(`next up after the kill: exit ${next.code} in ${ms} ms`);
    assert.equal(next.code, 0, `the next up succeeds without help:\n${next.stdout}\n${next.stderr}`);
    assert.match(
        next.stdout + next.stderr,
        new RegExp(`removed unverified base volume ${volume.replace(/\./g, "\\.")} \\(an interrupted upload of ours`),
        "recovery's undo removed it (not some other path)",
    );
    assert.deepEqual(ofUpload(), [volume], "a base and no marker");
    assert.ok(fs.readFileSync(path.join(sb.poolDir, volume)).equals(IMAGE), "the base holds the image's bytes");
});
