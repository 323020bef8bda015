/**
 * The KVM member resource's pure parts: where its key comes from (the stack's config), its diff, and the
 * hand-over of an earlier release's three resources per member to it.
 */
import { afterEach, test } from "node:test";
import { createHash } from "node:crypto";
import assert from "node:assert/strict";
import { configuredEntry, hostSession, keyFor, setKvmProvidersConfig } from "../../components/kvm/stack-config";
import { kvmMemberProvider, KvmMemberOutputs, KVM_MEMBER_TYPE } from "../../components/kvm/member-provider";
import { kvmMemberUrnOf } from "../../components/kvm/hand-over";
import { TEMPLATE_TYPE } from "../../components/kvm/member-template";
import { memberDependencyTypes } from "../../components/registry";
import { untargetedDependencies, urnType } from "../../src/engine/shared-targets";
import { memberOfVolume, poolOfTemplateVolume, templateVolumeName } from "../../components/kvm/naming";

const entry = {
    type: "kvm",
    ssh: { user: "root", privateKey: "KEY", knownHosts: "h ssh-ed25519 AAAA" },
    hosts: [{ name: "h1", address: "10.0.0.5", bridge: "br0" }],
    images: { deb: { url: "https://x/d.qcow2", sha256: "a".repeat(64), format: "qcow2" } },
    machineTypes: { small: { vcpu: 1, memoryMiB: 512 } },
};

afterEach(() => setKvmProvidersConfig(undefined));

test("the key and connection come from the stack's config, with the entry's defaults applied", () => {
    setKvmProvidersConfig({ lab: entry });
    const s = hostSession({ entry: "lab", host: "h1" });
    assert.equal(s.privateKey, "KEY");
    assert.deepEqual(s.conn, {
        host: "h1",
        user: "root",
        address: "10.0.0.5",
        port: 22,
        knownHosts: "h ssh-ed25519 AAAA",
    });
    assert.equal(s.storagePool, "default");
    // A key file named by the connection needs no entry at all.
    setKvmProvidersConfig({});
    assert.equal(keyFor("lab", { ...s.conn, privateKeyPath: "/k" }), undefined);
});

test("a missing entry, host or config says what is missing and what to do", () => {
    assert.throws(() => configuredEntry("lab"), /the stack's config has no `egress:providers`/);
    setKvmProvidersConfig({});
    assert.throws(() => keyFor("lab", { host: "h1", user: "u", address: "a", port: 22 }), /Put the entry back/);
    setKvmProvidersConfig({ lab: entry });
    assert.throws(
        () => hostSession({ entry: "lab", host: "h9" }),
        /host `h9` is no longer in kvm provider entry `lab`/,
    );
    setKvmProvidersConfig({ lab: { ...entry, hosts: [{ name: "h1", address: "a b", bridge: "br0" }] } });
    assert.throws(() => configuredEntry("lab"), /`lab` in the stack's config is not valid: hosts\.0\.address/);
});

const TPL = "egress-1a2b3c4d-tpl-web-0123abcd.json";
const news = (over: { host?: string; tpl?: string; wait?: number } = {}) => ({
    member: { entry: "lab", host: over.host ?? "h1", name: "web-0", tpl: over.tpl ?? TPL, wait: over.wait ?? 300 },
});
/** What a create of `news()` recorded (the digest is the provider's: read back through a diff). */
let olds: KvmMemberOutputs;

test("diff: a new template, host or name replaces, deleting first; a gone domain too; the wait only updates", async () => {
    setKvmProvidersConfig({ lab: entry });
    const conn = hostSession({ entry: "lab", host: "h1" }).conn;
    const diff = (o: KvmMemberOutputs, n: ReturnType<typeof news>) => kvmMemberProvider.diff!("id", o, n);
    // The digest of the inputs, as create records it: found as the one with no change.
    const digestOf = (n: ReturnType<typeof news>) =>
        createHash("sha256")
            .update(JSON.stringify({ entry: "lab", host: n.member.host, name: "web-0", tpl: n.member.tpl }))
            .digest("hex")
            .slice(0, 16);
    olds = { entry: "lab", conn, digest: digestOf(news()), wait: 300, ip: "192.0.2.7" };
    assert.deepEqual(await diff(olds, news()), { changes: false, replaces: [], deleteBeforeReplace: true });
    const tpl = await diff(olds, news({ tpl: "egress-1a2b3c4d-tpl-web-99999999.json" }));
    assert.deepEqual([tpl.changes, tpl.replaces, tpl.deleteBeforeReplace], [true, ["member"], true]);
    assert.deepEqual((await diff(olds, news({ host: "h2" }))).replaces, ["member"]);
    assert.deepEqual((await diff({ ...olds, gone: true }, news())).replaces, ["running"]);
    assert.deepEqual(await diff(olds, news({ wait: 60 })), { changes: true, replaces: [], deleteBeforeReplace: true });
    // Another address or port for the host in config: an update that records it, nothing replaced.
    setKvmProvidersConfig({ lab: { ...entry, hosts: [{ ...entry.hosts[0], port: 2222 }] } });
    assert.deepEqual(await diff(olds, news()), { changes: true, replaces: [], deleteBeforeReplace: true });
    // Still no address: an update looks once.
    assert.equal((await diff({ ...olds, ip: "" }, news())).changes, true);
});

test("hand-over: an earlier release's overlay, seed disk and domain of a member name its member resource", () => {
    const chain = "urn:pulumi:s::p::egress:index:ProxyPool$egress:kvm:KvmProxy";
    const member = `${chain}$${KVM_MEMBER_TYPE}::web-0`;
    for (const [type, name] of [
        ["Overlay", "web-0-disk"],
        ["SeedDisk", "web-0-seed"],
        ["Domain", "web-0-vm"],
    ])
        assert.equal(kvmMemberUrnOf(`${chain}$pulumi-nodejs:dynamic/egress:kvm:${type}::${name}`), member);
    // Not a member's part: left alone.
    assert.equal(kvmMemberUrnOf(`urn:pulumi:s::p::x$pulumi-nodejs:dynamic/egress:kvm:Domain::web-0-vm`), "");
    assert.equal(kvmMemberUrnOf(`${chain}$pulumi-nodejs:dynamic/egress:kvm:Domain::web-0`), "");
    assert.equal(kvmMemberUrnOf(`${chain}$pulumi-nodejs:dynamic/egress:kvm:BaseImage::web-0-vm`), "");
});

test("gc tells a template's volume from a member's, and finds it by its installation", () => {
    const prefix = "egress-1a2b3c4d-";
    const v = templateVolumeName(prefix, "web", "0123abcd99");
    assert.equal(v, "egress-1a2b3c4d-tpl-web-0123abcd.json");
    assert.equal(memberOfVolume(prefix, v), undefined);
    assert.equal(poolOfTemplateVolume(prefix, v), "web");
    assert.equal(poolOfTemplateVolume("egress-99999999-", v), undefined, "another installation's");
    assert.equal(poolOfTemplateVolume(prefix, "egress-1a2b3c4d-web-0-0123abcd.qcow2"), undefined);
});

test("a targeted up names the member templates the engine refused to create untargeted, and nothing else", () => {
    assert.ok(memberDependencyTypes().has(TEMPLATE_TYPE), "the kvm kind declares its templates");
    const tpl = `urn:pulumi:s::egress::egress:kvm:KvmBaseImages$${TEMPLATE_TYPE}::lab-tpl-web-0123abcd-h1`;
    const member = "urn:pulumi:s::egress::egress:index:ProxyPool$egress:kvm:KvmProxy::web-3";
    const other = "urn:pulumi:s::egress::egress:index:ProxyPool$pulumi-nodejs:dynamic/egress:local:Process::x";
    const message = [
        `error: Resource '${member}' depends on '${tpl}' which was was not specified in --target list.`,
        `error: Resource '${member}' depends on '${tpl}' which was was not specified in --target list.`,
        `error: Resource '${member}' depends on '${other}' which was was not specified in --target list.`,
    ].join("\n");
    assert.deepEqual(untargetedDependencies(message), [tpl]);
    assert.equal(urnType(tpl), TEMPLATE_TYPE);
    assert.deepEqual(untargetedDependencies("up failed: something else"), []);
});
