/** The four KVM providers' diffs: one connection rule (connectionDiff), and same-name volume replaces delete first. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { connectionDiff, KvmConnection } from "../../components/kvm/libvirt";
import { baseImageProvider } from "../../components/kvm/base-image";
import { overlayProvider } from "../../components/kvm/overlay";
import { seedDiskProvider } from "../../components/kvm/seed-disk";
import { domainProvider } from "../../components/kvm/domain";
import { sameVolumeName } from "../../components/kvm/volumes";

const conn: KvmConnection = { host: "h1", user: "root", address: "10.0.0.5", port: 22, knownHosts: "kh" };
const base = {
    conn,
    privateKey: "K",
    storagePool: "default",
    entry: "lab",
    key: "deb",
    url: "https://x/d.qcow2",
    sha256: "a".repeat(64),
    format: "qcow2" as const,
    volume: "base-lab-deb.qcow2",
    path: "/p/base",
    capacityBytes: 1,
    adopted: false,
};
const overlay = {
    conn,
    privateKey: "K",
    storagePool: "default",
    volume: "egress-1-p-0-aaaaaaaa.qcow2",
    basePath: "/p/base",
    baseFormat: "qcow2" as const,
    capacityBytes: 1,
    path: "/p/o",
};
const seed = {
    conn,
    privateKey: "K",
    storagePool: "default",
    volume: "egress-1-p-0-bbbbbbbb-seed.iso",
    userData: "#cloud-config\n",
    instanceId: "i",
    hostname: "p-0",
    installGuestAgent: true,
    path: "/p/s",
};
const domain = {
    conn,
    privateKey: "K",
    name: "egress-1-p-0",
    domainType: "qemu" as const,
    vcpu: 1,
    memoryMiB: 128,
    firmware: "uefi" as const,
    overlayPath: "/p/o",
    seedPath: "/p/s",
    bridge: "br0",
    metadata: { project: "p", stack: "s", pool: "p", member: "p-0", provider: "lab" },
    metadataNs: "urn:x",
    addressTimeoutSeconds: 300,
    ipAddress: "192.0.2.7",
};
const providers = [
    ["BaseImage", baseImageProvider, base],
    ["Overlay", overlayProvider, overlay],
    ["SeedDisk", seedDiskProvider, seed],
    ["Domain", domainProvider, domain],
] as const;

test("connectionDiff: another host replaces; address, port, known_hosts or key only update", () => {
    assert.deepEqual(connectionDiff({ conn, privateKey: "K" }, { conn, privateKey: "K" }), {
        replaces: [],
        changes: false,
    });
    assert.deepEqual(connectionDiff({ conn }, { conn: { ...conn, host: "h2" } }), {
        replaces: ["conn"],
        changes: true,
    });
    for (const c of [
        { ...conn, address: "10.0.0.6" },
        { ...conn, port: 2222 },
        { ...conn, knownHosts: "other" },
        { ...conn, user: "u" },
    ])
        assert.deepEqual(connectionDiff({ conn }, { conn: c }), { replaces: [], changes: true });
    assert.deepEqual(connectionDiff({ conn, privateKey: "K" }, { conn, privateKey: "K2" }), {
        replaces: [],
        changes: true,
    });
    assert.deepEqual(connectionDiff({ conn }, { conn, privateKey: undefined }), { replaces: [], changes: false });
});

test("all four providers treat connection changes alike", async () => {
    for (const [name, p, olds] of providers) {
        const d = (news: object) => (p.diff as any)("id", olds, { ...olds, ...news });
        assert.deepEqual(
            await d({}),
            { changes: false, replaces: [], deleteBeforeReplace: name === "Domain" },
            `${name} unchanged`,
        );
        const host = await d({ conn: { ...conn, host: "h2" } });
        assert.deepEqual([host.changes, host.replaces], [true, ["conn"]], `${name} host`);
        for (const news of [{ conn: { ...conn, address: "10.0.0.6" } }, { privateKey: "K2" }]) {
            const r = await d(news);
            assert.deepEqual([r.changes, r.replaces], [true, []], `${name} ${JSON.stringify(news)}`);
        }
    }
});

test("Overlay and SeedDisk: a replace keeping the volume name deletes first, a new name creates first", async () => {
    assert.equal(sameVolumeName({ volume: "a", storagePool: "p" }, { volume: "a", storagePool: "p" }), true);
    assert.equal(sameVolumeName({ volume: "a", storagePool: "p" }, { volume: "a", storagePool: "q" }), false);
    const ov = (news: object) => overlayProvider.diff!("id", overlay, { ...overlay, ...news });
    assert.deepEqual(await ov({ capacityBytes: 2 }), {
        changes: true,
        replaces: ["capacityBytes"],
        deleteBeforeReplace: true,
    });
    assert.deepEqual(await ov({ basePath: "/p/base2" }), {
        changes: true,
        replaces: ["basePath"],
        deleteBeforeReplace: true,
    });
    assert.deepEqual(await ov({ conn: { ...conn, host: "h2" } }), {
        changes: true,
        replaces: ["conn"],
        deleteBeforeReplace: true,
    });
    assert.deepEqual(await ov({ volume: "egress-1-p-0-cccccccc.qcow2", basePath: "/p/base2" }), {
        changes: true,
        replaces: ["volume", "basePath"],
        deleteBeforeReplace: false,
    });
    assert.equal((await ov({ storagePool: "other" })).deleteBeforeReplace, false);
    const sd = (news: object) => seedDiskProvider.diff!("id", seed, { ...seed, ...news });
    assert.deepEqual(await sd({ hostname: "p-00" }), {
        changes: true,
        replaces: ["hostname"],
        deleteBeforeReplace: true,
    });
    assert.deepEqual(await sd({ volume: "egress-1-p-0-dddddddd-seed.iso", userData: "#cloud-config\n#2\n" }), {
        changes: true,
        replaces: ["volume", "userData"],
        deleteBeforeReplace: false,
    });
});

test("Domain: an unknown address shows as an update; a known one with nothing changed does not", async () => {
    assert.equal((await domainProvider.diff!("id", domain, domain)).changes, false);
    assert.equal((await domainProvider.diff!("id", { ...domain, ipAddress: "" }, domain)).changes, true);
});

test("Domain: a read that found the domain gone (running: false) makes the next up replace it", async () => {
    const d = (olds: object) => (domainProvider.diff as any)("id", { ...domain, ...olds }, domain);
    const gone = await d({ state: "shut off", running: false });
    assert.deepEqual(gone, { changes: true, replaces: ["running"], deleteBeforeReplace: true });
    assert.deepEqual((await d({ state: "running", running: true })).replaces, []);
    assert.deepEqual((await d({})).replaces, [], "state from before `running` existed is not replaced");
});
