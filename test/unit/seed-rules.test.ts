/**
 * Seed rules (issue 9 §3): squid `http_port` vs member `port` (comments ignored, any line may match),
 * user-data bytes (text stays text, anything else travels as base64; gzip is read gunzipped), `~` in
 * KVM ssh paths.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as zlib from "node:zlib";
import {
    decodeUserData,
    encodeUserData,
    parseEgressConfig,
    problems,
    squidHttpPorts,
    userDataText,
} from "./config-fixtures";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "egress-seed-rules-"));
after(() => fs.rmSync(root, { recursive: true, force: true }));
const squidFile = (conf: string) =>
    `#cloud-config\nwrite_files:\n  - path: /etc/squid/conf.d/egress.conf\n    content: |\n${conf
        .split("\n")
        .map((l) => `      ${l}`)
        .join("\n")}\n`;
const localPool = (port: number, inline: string) => ({
    providers: { local: { type: "local" } },
    pools: [
        { name: "p", provider: "local", replicas: 2, port: 3128, members: [{ index: 1, port, cloudInit: { inline } }] },
    ],
});

test("squidHttpPorts: every http_port line, with or without an address and with options after it", () => {
    assert.deepEqual(squidHttpPorts(squidFile("http_port 3128")), [3128]);
    assert.deepEqual(squidHttpPorts(squidFile("http_port 10.0.0.1:8080")), [8080]);
    assert.deepEqual(squidHttpPorts(squidFile("http_port 0.0.0.0:8080 name=crawl")), [8080]);
    assert.deepEqual(squidHttpPorts(squidFile("http_port [::1]:8081 intercept")), [8081]);
    assert.deepEqual(
        squidHttpPorts(squidFile("http_port 3128\nhttp_port 10.0.0.1:8080 name=x\nhttp_port 9090")),
        [3128, 8080, 9090],
    );
    // runcmd lines that append to squid.conf count too.
    assert.deepEqual(
        squidHttpPorts(`#cloud-config\nruncmd:\n  - echo "http_port 8082" >> /etc/squid/squid.conf\n`),
        [8082],
    );
    assert.deepEqual(
        squidHttpPorts(`#cloud-config\nruncmd:\n  - [sh, -c, "echo 'http_port 8083' >> /etc/squid/squid.conf"]\n`),
        [8083],
    );
});

test("squidHttpPorts: commented lines configure nothing (squid's `#` and YAML's)", () => {
    assert.deepEqual(squidHttpPorts(squidFile("# http_port 3128\nhttp_port 8080")), [8080]);
    assert.deepEqual(squidHttpPorts(squidFile("#http_port 3128")), []);
    assert.deepEqual(
        squidHttpPorts(`#cloud-config\n# squid listens on http_port 3128 by default\nwrite_files: []\n`),
        [],
    );
    assert.deepEqual(
        squidHttpPorts(`#cloud-config\nruncmd:\n  - [systemctl, restart, squid]  # http_port 3128 stays\n`),
        [],
    );
    assert.deepEqual(squidHttpPorts(squidFile("visible_hostname egress\nhttp_access allow localnet")), []);
    // Names that merely contain the word, and a port number beyond squid's.
    assert.deepEqual(squidHttpPorts(squidFile("https_port 8443 cert=/x.pem\nmy_http_port 1")), []);
});

test("a member port is accepted when any http_port line matches it", () => {
    const conf = squidFile(
        "# http_port 3128 (Debian's default, commented out)\nhttp_port 10.0.0.1:8080 name=crawl\nhttp_port 9090",
    );
    assert.equal(parseEgressConfig(localPool(8080, conf), root).pools[0].members[0].port, 8080);
    assert.equal(parseEgressConfig(localPool(9090, conf), root).pools[0].members[0].port, 9090);
    assert.deepEqual(
        problems(() => parseEgressConfig(localPool(3128, conf), root)),
        [
            "egress:pools[0].members[0].port: must be one of 8080, 9090: member 1's cloud-init sets squid http_port 8080, 9090",
        ],
    );
    // Only a commented http_port: nothing to check against.
    assert.equal(parseEgressConfig(localPool(4000, squidFile("#http_port 3128")), root).pools[0].members[0].port, 4000);
});

test("a pool's shared cloud-init with several http_port lines accepts the pool port if one matches", () => {
    fs.writeFileSync(path.join(root, "two-ports.yaml"), squidFile("http_port 127.0.0.1:3128\nhttp_port 8080"));
    const raw = (port: number) => ({
        providers: { local: { type: "local" } },
        pools: [{ name: "p", provider: "local", replicas: 1, port, cloudInit: { file: "two-ports.yaml" } }],
    });
    assert.equal(parseEgressConfig(raw(3128), root).pools[0].port, 3128);
    assert.equal(parseEgressConfig(raw(8080), root).pools[0].port, 8080);
    assert.deepEqual(
        problems(() => parseEgressConfig(raw(9000), root)),
        ["egress:pools[0].port: must match the squid http_port 3128, 8080 set by the pool's cloud-init"],
    );
});

test("gzip user-data is checked gunzipped, as cloud-init reads it; bytes that are neither text nor gzip are refused", () => {
    fs.writeFileSync(path.join(root, "squid.yaml.gz"), zlib.gzipSync(squidFile("http_port 8080")));
    const raw = (port: number, file: string) => ({
        providers: { local: { type: "local" } },
        pools: [{ name: "p", provider: "local", replicas: 1, port, cloudInit: { file } }],
    });
    assert.equal(parseEgressConfig(raw(8080, "squid.yaml.gz"), root).pools[0].port, 8080);
    assert.deepEqual(
        problems(() => parseEgressConfig(raw(3128, "squid.yaml.gz"), root)),
        ["egress:pools[0].port: must match the squid http_port 8080 set by the pool's cloud-init"],
    );
    fs.writeFileSync(path.join(root, "junk.bin"), Buffer.from([0xff, 0xfe, 0x00, 0x80, 0x81]));
    assert.deepEqual(
        problems(() => parseEgressConfig(raw(3128, "junk.bin"), root)),
        [
            "egress:pools[0].cloudInit.file: cloud-init user-data must be UTF-8 text or gzip of it (cloud-init reads nothing else)",
        ],
    );
});

test("user-data encoding: text stays as it is (inputs of existing stacks do not change), binary travels as base64", () => {
    const text = Buffer.from("#cloud-config\n# café ☕\r\npackages: [squid]\n", "utf8");
    assert.deepEqual(encodeUserData(text), { userData: text.toString("utf8") });
    const gz = zlib.gzipSync(text);
    const enc = encodeUserData(gz);
    assert.equal(enc.encoding, "base64");
    assert.deepEqual(decodeUserData(enc), gz);
    assert.equal(userDataText(gz), text.toString("utf8"));
    // A UTF-8 BOM survives both ways.
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), text]);
    assert.deepEqual(decodeUserData(encodeUserData(bom)), bom);
    assert.equal(userDataText(Buffer.from([0x1f, 0x8b, 0x00])), undefined, "a truncated gzip is not text");
});

test("`~` in KVM ssh paths is the user's home; `~user` is refused with a clear rule", () => {
    const kvm = (ssh: object) => ({
        providers: {
            k: {
                type: "kvm",
                ssh: { user: "root", ...ssh },
                hosts: [{ name: "h", address: "192.0.2.1", bridge: "br0" }],
                images: { deb: { url: "https://example.org/d.qcow2", sha256: "a".repeat(64) } },
            },
        },
        pools: [],
    });
    const parsed = parseEgressConfig(
        kvm({ privateKeyPath: "~/.ssh/egress_ed25519", knownHostsPath: "~/.ssh/known_hosts" }),
        root,
    ).providers.k;
    assert.equal(parsed.type, "kvm");
    if (parsed.type !== "kvm") return;
    assert.equal(parsed.ssh.privateKeyPath, path.join(os.homedir(), ".ssh", "egress_ed25519"));
    assert.equal(parsed.ssh.knownHostsPath, path.join(os.homedir(), ".ssh", "known_hosts"));
    const abs = parseEgressConfig(kvm({ privateKeyPath: "/etc/egress/key", knownHosts: "h ssh-ed25519 AAAA" }), root)
        .providers.k;
    assert.equal(abs.type === "kvm" && abs.ssh.privateKeyPath, "/etc/egress/key");
    assert.deepEqual(
        problems(() =>
            parseEgressConfig(kvm({ privateKeyPath: "~bob/.ssh/id", knownHosts: "h ssh-ed25519 AAAA" }), root),
        ),
        [
            "egress:providers.k.ssh.privateKeyPath: only `~` and `~/...` are expanded (to this user's home); write the full path",
        ],
    );
});
