/** Provider health (stages) and the GC collector against the real libvirt sandbox. */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { kvmChecker } from "../../components/kvm/health";
import { createLogger } from "../../src/log/logger";
import { kvmCollector } from "../../components/kvm/gc";
import { domainProvider } from "../../components/kvm/domain";
import { memberObjectNames, METADATA_NS } from "../../components/kvm/naming";
import { connection, kvmEntry, lv, Sandbox, startSandbox, teardown, wrongKnownHosts } from "./sandbox";
import { TEST_INSTALLATION } from "../helpers/installation";
import { pendingCreateUndoers } from "../../components/registry";

let sb: Sandbox;
const img = { url: "http://127.0.0.1:9/unused.qcow2", sha256: "0".repeat(64) };
before(() => {
    sb = startSandbox();
});
after(() => teardown({}));

test(
    "health: a good host answers with libvirt version, hostname and pool facts; each virsh call is a debug line",
    { timeout: 30_000 },
    async () => {
        const lines: string[] = [];
        const log = createLogger({ level: "debug", destination: { write: (l: string) => void lines.push(l) } });
        const [v] = await kvmChecker("lab", kvmEntry(sb, img), { timeoutMs: 5000, log }).check();
        assert.equal(v.ok, true, v.message);
        const calls = lines.map((l) => JSON.parse(l)).filter((l) => l.component === "virsh");
        assert.deepEqual(
            calls.map((c) => [c.level, c.command, c.host, c.exitCode, c.ok, c.stage]),
            [
                [20, "version", "sandbox", 0, true, undefined],
                [20, "hostname", "sandbox", 0, true, undefined],
                [20, "pool-info", "sandbox", 0, true, undefined],
            ],
        );
        assert.ok(calls.every((c) => typeof c.durationMs === "number" && c.durationMs >= 0));
        assert.ok(
            !lines.join("\n").includes("PRIVATE KEY") && !lines.join("\n").includes(sb.knownHosts.trim()),
            "no key material",
        );
        assert.equal(v.target, "sandbox");
        assert.match(String(v.details?.libvirtVersion), /^\d+\.\d+/);
        assert.equal(v.details?.poolState, "running");
        assert.ok(Number(v.details?.availableBytes) > 0);
        assert.ok(!JSON.stringify(v).includes("PRIVATE KEY"));
    },
);

test("health: each failing stage is named", { timeout: 60_000 }, async () => {
    const base = kvmEntry(sb, img);
    const host = base.hosts[0];
    const verdict = async (e: typeof base) => (await kvmChecker("lab", e, { timeoutMs: 3000 }).check())[0];
    const unreachable = await verdict({ ...base, hosts: [{ ...host, port: 1 }] });
    assert.deepEqual([unreachable.ok, unreachable.stage], [false, "tcp"]);
    assert.match(unreachable.message, /cannot reach sshd at 127\.0\.0\.1:1/);
    const badKey = await verdict({ ...base, ssh: { ...base.ssh, privateKey: "not a key" } });
    assert.deepEqual([badKey.ok, badKey.stage], [false, "key"]);
    const hostKey = await verdict({ ...base, ssh: { ...base.ssh, knownHosts: wrongKnownHosts(sb) } });
    assert.deepEqual([hostKey.ok, hostKey.stage], [false, "host-key"]);
    const other = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "egress-kvm-key-")), "id");
    require("node:child_process").execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", other]);
    const auth = await verdict({ ...base, ssh: { ...base.ssh, privateKey: fs.readFileSync(other, "utf8") } });
    assert.deepEqual([auth.ok, auth.stage], [false, "ssh-auth"]);
    const pool = await verdict({ ...base, hosts: [{ ...host, storagePool: "nope" }] });
    assert.deepEqual([pool.ok, pool.stage], [false, "pool"]);
});

test(
    "gc: lists our domain and member volumes for the stack, removes them, tolerates gone",
    { timeout: 60_000 },
    async () => {
        const n = memberObjectNames(TEST_INSTALLATION.id, "gcpool-0");
        const vol = `${n.domain}-0123abcd.qcow2`;
        for (const v of [vol, `${n.domain}-0123abcd-seed.iso`]) fs.rmSync(path.join(sb.poolDir, v), { force: true });
        lv(["pool-refresh", sb.pool]);
        lv(["vol-create-as", sb.pool, vol, "1M", "--format", "qcow2"]);
        lv(["vol-create-as", sb.pool, `${n.domain}-0123abcd-seed.iso`, "1M", "--format", "raw"]);
        await domainProvider.create!({
            conn: connection(sb),
            privateKey: sb.privateKey,
            name: n.domain,
            domainType: "qemu",
            vcpu: 1,
            memoryMiB: 128,
            firmware: "bios",
            overlayPath: path.join(sb.poolDir, vol),
            seedPath: path.join(sb.poolDir, `${n.domain}-0123abcd-seed.iso`),
            bridge: sb.bridge,
            metadata: {
                project: "gcproj",
                stack: "gcstack",
                pool: "gcpool",
                member: "gcpool-0",
                provider: "lab",
                installation: TEST_INSTALLATION.id,
            },
            metadataNs: METADATA_NS,
            addressTimeoutSeconds: 0,
        });
        assert.match(
            lv(["dumpxml", "--inactive", n.domain]),
            new RegExp(`egress:member[^>]*project="gcproj"[^>]*installation="${TEST_INSTALLATION.id}"`),
        );
        const c = kvmCollector("lab", kvmEntry(sb, img));
        // Names carry the installation: another installation (whatever its stack is called) finds none of it.
        assert.deepEqual(await c.list({ project: "gcproj", stack: "gcstack", installation: "1111aaaa" }), []);
        const things = await c.list({ project: "gcproj", stack: "gcstack", installation: TEST_INSTALLATION.id });
        assert.deepEqual(
            things.map((t) => [t.type, t.name, t.member]).sort((a, b) => (a.join() < b.join() ? -1 : 1)),
            [
                ["domain", n.domain, "gcpool-0"],
                ["volume", `${sb.pool}/${n.domain}-0123abcd-seed.iso`, "gcpool-0"],
                ["volume", `${sb.pool}/${vol}`, "gcpool-0"],
            ],
        );
        for (const t of things) await c.remove(t);
        for (const t of things) await c.remove(t); // already gone
        assert.deepEqual(await c.list({ project: "gcproj", stack: "gcstack", installation: TEST_INSTALLATION.id }), []);
    },
);

// Names carry the installation id, so two installations' members differ by name. A domain under our name
// that carries another id (two copies of one stack made before ids, which adopt the same id; a restored
// backup; a hand-made domain) is the case left: it is never ours.
test(
    "a domain under our name that carries another installation is never replaced, undone or collected",
    { timeout: 90_000 },
    async () => {
        const theirs = "1111aaaa";
        const n = memberObjectNames(TEST_INSTALLATION.id, "tw-0");
        const vol = `${n.domain}-0123abcd.qcow2`;
        const seed = `${n.domain}-0123abcd-seed.iso`;
        for (const v of [vol, seed]) fs.rmSync(path.join(sb.poolDir, v), { force: true });
        lv(["pool-refresh", sb.pool]);
        lv(["vol-create-as", sb.pool, vol, "1M", "--format", "qcow2"]);
        lv(["vol-create-as", sb.pool, seed, "1M", "--format", "raw"]);
        const inputs = (installation: string) => ({
            conn: connection(sb),
            privateKey: sb.privateKey,
            name: n.domain,
            domainType: "qemu" as const,
            vcpu: 1,
            memoryMiB: 128,
            firmware: "bios" as const,
            overlayPath: path.join(sb.poolDir, vol),
            seedPath: path.join(sb.poolDir, seed),
            bridge: sb.bridge,
            metadata: { project: "twinproj", stack: "twin", pool: "tw", member: "tw-0", provider: "lab", installation },
            metadataNs: METADATA_NS,
            addressTimeoutSeconds: 0,
        });
        await domainProvider.create!(inputs(theirs));
        try {
            const uuid = lv(["domuuid", n.domain]).trim();
            // Our create of the same member: refused, naming both installations; theirs keeps running.
            await assert.rejects(
                domainProvider.create!(inputs(TEST_INSTALLATION.id)),
                new RegExp(
                    `domain ${n.domain} on host sandbox belongs to installation ${theirs}, not to this stack's installation ${TEST_INSTALLATION.id}`,
                ),
            );
            // Our crash undo of a pending create under that name: refused too.
            const undo = pendingCreateUndoers()["pulumi-nodejs:dynamic/egress:kvm:Domain"];
            await assert.rejects(
                undo(inputs(TEST_INSTALLATION.id) as unknown as Record<string, unknown>, TEST_INSTALLATION),
                /belongs to installation 1111aaaa/,
            );
            // Our gc: neither their domain nor its disks.
            const c = kvmCollector("lab", kvmEntry(sb, img));
            assert.deepEqual(
                (await c.list({ project: "twinproj", stack: "twin", installation: TEST_INSTALLATION.id })).filter(
                    (t) => t.member === "tw-0",
                ),
                [],
            );
            assert.equal(lv(["domuuid", n.domain]).trim(), uuid, "the same domain, untouched");
        } finally {
            for (const args of [
                ["destroy", n.domain],
                ["undefine", n.domain, "--nvram"],
                ...[vol, seed].map((v) => ["vol-delete", "--pool", sb.pool, v]),
            ]) {
                try {
                    lv(args);
                } catch {
                    // already gone (a domain that never started has nothing to destroy)
                }
            }
        }
    },
);
