/** The KVM sample stack, config rules and the kind's pure naming/XML/seed logic. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { planMembers } from "../../src/model";
import { loadStackConfig, parseEgressConfig, ConfigError } from "../../src/config";
import { PACKAGE_ROOT } from "../../src/engine/env";
import {
    baseVolumeName,
    memberObjectNames,
    memberOfVolume,
    pickHost,
    poolBaseNeeds,
    installationPrefix,
} from "../../components/kvm/naming";
import { domainXml, parseMetadata, metadataXml } from "../../components/kvm/xml";
import { vendorData, GUEST_AGENT_SCRIPT } from "../../components/kvm/seed-iso";
import { classifyVirshFailure } from "../../components/kvm/libvirt";
import { parseDomifaddr, parseDomstateReason } from "../../components/kvm/address";

const sample = () =>
    YAML.parse(fs.readFileSync(path.join(PACKAGE_ROOT, "stacks", "Pulumi.example-kvm.yaml"), "utf8")).config;

test("the five-proxy sample validates: four share squid.yaml on 3128, the fifth runs on 8080", () => {
    const cfg = loadStackConfig(PACKAGE_ROOT, "example-kvm");
    const plans = planMembers(cfg.pools[0]);
    assert.deepEqual(
        plans.map((p) => p.port),
        [3128, 3128, 3128, 3128, 8080],
    );
    assert.deepEqual(
        plans.slice(0, 4).map((p) => p.cloudInit),
        Array(4).fill({ file: "cloud-init/squid.yaml" }),
    );
    assert.match(plans[4].cloudInit!.inline!, /http_port 8080/);
});

test("the sample's fifth member without `port: 8080` is rejected, naming the path", () => {
    const c = sample();
    delete c["egress:pools"][0].members[0].port;
    assert.throws(
        () => parseEgressConfig({ providers: c["egress:providers"], pools: c["egress:pools"] }, PACKAGE_ROOT),
        (e: unknown) =>
            e instanceof ConfigError &&
            /egress:pools\[0\]\.members\[0\]\.port: must be 8080: member 4's cloud-init sets squid http_port 8080 \(got 3128\)/.test(
                e.message,
            ),
    );
});

test("kvm entry rules name their config path", () => {
    const c = sample();
    const e = c["egress:providers"]["kvm-home"];
    delete e.ssh.knownHosts;
    e.hosts[0].network = "default";
    e.images["debian-13"].sha256 = "XYZ";
    assert.throws(
        () => parseEgressConfig({ providers: c["egress:providers"], pools: c["egress:pools"] }, PACKAGE_ROOT),
        (err: Error) =>
            /egress:providers\.kvm-home\.ssh: exactly one of `knownHosts` or `knownHostsPath`/.test(err.message) &&
            /egress:providers\.kvm-home\.hosts\[0\]: exactly one of `bridge` or `network`/.test(err.message) &&
            /egress:providers\.kvm-home\.images\.debian-13\.sha256: must be 64 lower-case hex digits/.test(err.message),
    );
});

test("an image's transfer deadlines are validated, naming the path and the rule", () => {
    const c = sample();
    const img = c["egress:providers"]["kvm-home"].images["debian-13"];
    img.transfer = { minKiBPerSecond: 0, graceSeconds: 1.5, idleSeconds: "60", burst: 1 };
    assert.throws(
        () => parseEgressConfig({ providers: c["egress:providers"], pools: c["egress:pools"] }, PACKAGE_ROOT),
        (err: Error) =>
            /egress:providers\.kvm-home\.images\.debian-13\.transfer\.minKiBPerSecond: must be a whole number of KiB\/s from 1 to 10485760/.test(
                err.message,
            ) &&
            /egress:providers\.kvm-home\.images\.debian-13\.transfer\.graceSeconds: must be a whole number of seconds from 0 to 3600/.test(
                err.message,
            ) &&
            /egress:providers\.kvm-home\.images\.debian-13\.transfer\.idleSeconds: must be a whole number of seconds from 1 to 3600/.test(
                err.message,
            ) &&
            /egress:providers\.kvm-home\.images\.debian-13\.transfer.*burst/.test(err.message),
    );
    img.transfer = { minKiBPerSecond: 128 };
    const cfg = parseEgressConfig({ providers: c["egress:providers"], pools: c["egress:pools"] }, PACKAGE_ROOT);
    assert.deepEqual(
        (cfg.providers["kvm-home"] as any).images["debian-13"].transfer,
        { minKiBPerSecond: 128 },
        "unset fields stay unset: the provider applies the defaults",
    );
});

test("naming, placement and base needs", () => {
    const cfg = loadStackConfig(PACKAGE_ROOT, "example-kvm");
    const entry = cfg.providers["kvm-home"] as any;
    assert.equal(baseVolumeName("kvm-home", "debian-13", "qcow2"), "base-kvm-home-debian-13.qcow2");
    assert.equal(installationPrefix("0a1b2c3d"), "egress-0a1b2c3d-");
    assert.notEqual(
        memberObjectNames("0a1b2c3d", "home-3").domain,
        memberObjectNames("1111aaaa", "home-3").domain,
        "two installations, two names",
    );
    assert.equal(memberObjectNames("0a1b2c3d", "home-3").domain, "egress-0a1b2c3d-home-3");
    assert.equal(pickHost(entry, planMembers(cfg.pools[0])[2]).name, "beelink");
    assert.deepEqual(
        poolBaseNeeds(entry, cfg.pools[0]).map((n) => `${n.key}/${n.host.name}`),
        ["debian-13/beelink"],
    );
    assert.equal(memberOfVolume(installationPrefix("0a1b2c3d"), "egress-0a1b2c3d-web-12-0a1b2c3d.qcow2"), "web-12");
    assert.equal(memberOfVolume(installationPrefix("0a1b2c3d"), "base-x-y.qcow2"), undefined);
});

test("domain XML: UEFI default, BIOS on request, scsi seed, metadata round trip", () => {
    const meta = { project: "p", stack: "s&<", pool: "web", member: "web-0", provider: "kvm" };
    const spec = {
        name: "d",
        domainType: "qemu" as const,
        vcpu: 1,
        memoryMiB: 256,
        firmware: "uefi" as const,
        overlayPath: "/p/o.qcow2",
        seedPath: "/p/s.iso",
        bridge: "br0",
        metadata: meta,
        metadataNs: "urn:x",
    };
    const x = domainXml(spec);
    assert.match(x, /<os firmware="efi">/);
    assert.match(x, /<feature enabled="no" name="secure-boot"\/>/);
    assert.match(x, /<features><acpi\/><\/features>/);
    assert.match(x, /device="cdrom">.*bus="scsi"/);
    assert.doesNotMatch(x, /bus="sata"/);
    assert.doesNotMatch(domainXml({ ...spec, firmware: "bios" }), /firmware=/);
    assert.deepEqual(parseMetadata(x, "urn:x"), meta);
    assert.equal(parseMetadata(x, "urn:other"), undefined);
    assert.deepEqual(
        parseMetadata(
            metadataXml(meta, "urn:x")
                .replace(/egress:/g, "")
                .replace(/ xmlns:[^ ]+/, ""),
            "urn:x",
        ),
        meta,
    );
});

test("vendor-data: script alone, or multipart with text/plain parts", () => {
    assert.equal(vendorData({ installGuestAgent: true }), GUEST_AGENT_SCRIPT);
    assert.equal(vendorData({ installGuestAgent: false }), undefined);
    assert.equal(vendorData({ installGuestAgent: false, vendorData: "#cloud-config\n" }), "#cloud-config\n");
    const mp = vendorData({ installGuestAgent: true, vendorData: "#cloud-config\n" })!;
    assert.equal(mp.match(/Content-Type: text\/plain/g)?.length, 2);
});

test("virsh failures map to stages; domifaddr parsing skips loopback", () => {
    assert.equal(
        classifyVirshFailure("error: authentication failed: !!! SSH HOST KEY VERIFICATION FAILED !!!").stage,
        "host-key",
    );
    assert.equal(
        classifyVirshFailure("error: unable to connect to server at '10.0.0.1:22': Connection refused").stage,
        "tcp",
    );
    assert.equal(
        classifyVirshFailure("error: libssh transport error: failed to authenticate: Access denied for 'publickey'")
            .stage,
        "ssh-auth",
    );
    assert.equal(
        classifyVirshFailure("error: Storage volume not found: no storage vol with matching path 'x'").notFound,
        true,
    );
    const out =
        " lo   00:00:00:00:00:00  ipv4  127.0.0.1/8\n eth0 52:54:00:aa:bb:cc  ipv4  192.168.1.23/24\n eth0 52:54:00:aa:bb:cc  ipv6  fe80::1/64\n";
    assert.deepEqual(parseDomifaddr(out), ["192.168.1.23"]);
});

test("domstate --reason: state and reason, as the address wait reads them", () => {
    assert.deepEqual(parseDomstateReason("paused (user)\n"), { state: "paused", reason: "user" });
    assert.deepEqual(parseDomstateReason("shut off (crashed)"), { state: "shut off", reason: "crashed" });
    assert.deepEqual(parseDomstateReason("running (booted)"), { state: "running", reason: "booted" });
    assert.deepEqual(parseDomstateReason("crashed (panicked)"), { state: "crashed", reason: "panicked" });
    assert.deepEqual(parseDomstateReason("running"), { state: "running", reason: "" });
});
