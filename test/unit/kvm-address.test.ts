/** `hosts[].address` goes into the libvirt URI: only host names and IP literals are accepted. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseEgressConfig, ConfigError } from "../../src/config";
import { hostAddressProblem, libvirtUri, KvmConnection } from "../../components/kvm/libvirt";

const GOOD = [
    "10.0.0.5",
    "100.64.0.10",
    "0.0.0.0",
    "beelink",
    "beelink.lan",
    "kvm-1.example.org",
    "example.org.",
    "xn--bcher-kva.example",
    "::1",
    "2001:db8::5",
    "fe80::1",
    "::ffff:192.0.2.1",
];
const BAD = [
    "",
    " ",
    "10.0.0.5 ",
    "a b",
    "host\n",
    "host?x=1",
    "host#frag",
    "host/path",
    "root@host",
    "host:22",
    "[::1]",
    "fe80::1%eth0",
    "10.0.0.256",
    "1.2.3",
    "999.1.1.1",
    "-lead.example",
    "trail-.example",
    "a..b",
    "under_score.lan",
    "x".repeat(64) + ".lan",
    "héte.lan",
    "h?known_hosts_verify=ignore",
    "2001:db8::zz",
];

function entry(address: string) {
    return {
        type: "kvm",
        ssh: { user: "root", privateKeyPath: "/k", knownHosts: "h ssh-ed25519 AAAA" },
        hosts: [{ name: "h1", address, bridge: "br0" }],
        images: { deb: { url: "https://example.org/d.qcow2", sha256: "a".repeat(64) } },
    };
}
const parse = (address: string) =>
    parseEgressConfig(
        {
            providers: { lab: entry(address) },
            pools: [{ name: "p", provider: "lab", replicas: 1, placement: { zone: "h1" } }],
        },
        "/tmp",
    );

test("host addresses: names and IP literals pass, anything that could bend the URI fails", () => {
    for (const a of GOOD) assert.equal(hostAddressProblem(a), undefined, a);
    for (const a of BAD) assert.match(hostAddressProblem(a) ?? "", /must be a host name \(RFC 1123/, JSON.stringify(a));
});

test("the schema refuses a bad hosts[].address, naming the config path", () => {
    assert.doesNotThrow(() => parse("beelink.lan"));
    assert.doesNotThrow(() => parse("2001:db8::5"));
    for (const a of ["kvm.lan?known_hosts_verify=ignore", "root@kvm", "kvm.lan/x", "kvm lan", "kvm#x"])
        assert.throws(
            () => parse(a),
            (e: unknown) =>
                e instanceof ConfigError &&
                /egress:providers\.lab\.hosts\[0\]\.address: must be a host name \(RFC 1123/.test(e.message),
            a,
        );
});

test("libvirtUri: brackets IPv6, keeps known_hosts_verify, refuses bad addresses and ports", () => {
    const conn = (address: string, port = 22): KvmConnection => ({
        host: "h1",
        user: "ro ot",
        address,
        port,
        knownHosts: "x",
    });
    const u4 = libvirtUri(conn("10.0.0.5"), "/tmp/k y", "/tmp/kh");
    assert.equal(
        u4,
        "qemu+libssh://ro%20ot@10.0.0.5:22/system?keyfile=%2Ftmp%2Fk%20y&known_hosts=%2Ftmp%2Fkh&known_hosts_verify=normal&sshauth=privkey&no_tty=1",
    );
    assert.match(
        libvirtUri(conn("2001:db8::5", 2222), "/k", "/kh"),
        /^qemu\+libssh:\/\/ro%20ot@\[2001:db8::5\]:2222\/system\?.*known_hosts_verify=normal/,
    );
    assert.match(libvirtUri(conn("[::1]"), "/k", "/kh"), /@\[::1\]:22\/system\?/);
    for (const a of ["h?known_hosts_verify=ignore&x=", "h#", "h/system", "u@h", "h 1", "[h?x]"])
        assert.throws(
            () => libvirtUri(conn(a), "/k", "/kh"),
            (e: any) => e.stage === "tcp" && /libvirt host h1: address must be a host name/.test(e.message),
            a,
        );
    for (const p of [0, 65536, 22.5, NaN])
        assert.throws(() => libvirtUri(conn("h", p), "/k", "/kh"), /port must be 1-65535/);
});
