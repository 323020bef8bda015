/**
 * The default user-data of the kvm and gcp kinds (one generator, components/shared/squid.ts): squid is
 * configured before it starts and never restarted, so a published proxy never goes dark for squid's
 * 30 s shutdown_lifetime.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { parse } from "yaml";
import { defaultUserData } from "../../components/kvm/squid-config";
import { defaultCloudInit } from "../../components/gcp/squid-config";
import { SQUID_DROP_IN_PATH } from "../../components/shared/squid";

const RANGES = ["203.0.113.0/24", "10.0.0.0/8"];
const cases: [string, (port: number) => string][] = [
    ["kvm", (port) => defaultUserData(port)],
    ["gcp", (port) => defaultCloudInit(port, RANGES)],
];

for (const [kind, userData] of cases) {
    test(`${kind}: squid's config is written before squid starts, and squid is never restarted`, () => {
        for (const port of [3128, 8080]) {
            const text = userData(port);
            assert.ok(text.startsWith("#cloud-config\n"), text);
            assert.doesNotMatch(text, /restart|reload|reconfigure/i, "nothing restarts squid once it runs");
            const doc = parse(text);
            assert.deepEqual(doc.packages, ["squid"]);
            // write_files runs in cloud-init's init stage, before `packages` (config stage) installs and starts
            // squid, unless deferred (then it runs in the final stage, after squid started).
            assert.equal(doc.write_files.length, 1);
            const [file] = doc.write_files;
            assert.equal(file.path, SQUID_DROP_IN_PATH);
            assert.equal(file.defer, undefined, "not deferred: written before squid starts");
            // The only command: start it if it is not running already.
            assert.deepEqual(doc.runcmd, [["systemctl", "enable", "--now", "squid"]]);
            // Debian's and Ubuntu's squid.conf already listen on 3128: no second http_port 3128.
            const ports = (file.content as string).split("\n").filter((l) => l.startsWith("http_port"));
            assert.deepEqual(ports, port === 3128 ? [] : [`http_port ${port}`]);
            assert.match(file.content, /^visible_hostname egress-proxy$/m);
        }
    });
}

test("gcp: the drop-in admits only the allowed ranges and reveals nothing about clients", () => {
    const {
        write_files: [file],
        package_update,
    } = parse(defaultCloudInit(8080, RANGES));
    assert.equal(package_update, true);
    assert.deepEqual(file.content.trim().split("\n"), [
        "http_port 8080",
        "visible_hostname egress-proxy",
        "acl egress_clients src 203.0.113.0/24 10.0.0.0/8",
        "http_access allow egress_clients",
        "http_access deny all",
        "cache deny all",
        "via off",
        "forwarded_for delete",
    ]);
});

test("kvm: the default user-data keeps its exact bytes (a change would replace every member's seed)", () => {
    assert.equal(
        defaultUserData(8080),
        [
            "#cloud-config",
            "packages: [squid]",
            "write_files:",
            "  - path: /etc/squid/conf.d/egress.conf",
            "    content: |",
            "      http_port 8080",
            "      visible_hostname egress-proxy",
            "      http_access allow localnet",
            "runcmd:",
            "  - [systemctl, enable, --now, squid]",
            "",
        ].join("\n"),
    );
});

const PASSWD = "crawler:$apr1$abcdefgh$FBwExRW4dCc8aL.OvjpIE1\n";
const authCases: [string, (port: number) => string][] = [
    ["kvm", (port) => defaultUserData(port, PASSWD)],
    ["gcp", (port) => defaultCloudInit(port, RANGES, PASSWD)],
];
for (const [kind, userData] of authCases) {
    test(`${kind}: with auth, the passwd file (hashes, squid's group, 0640) is written with the drop-in, and squid requires credentials after the source range`, () => {
        const doc = parse(userData(8080));
        assert.equal(doc.write_files.length, 2);
        const [dropIn, passwd] = doc.write_files;
        assert.equal(passwd.path, "/etc/squid/egress.passwd");
        assert.equal(passwd.owner, "root:proxy");
        assert.equal(passwd.permissions, "0640");
        assert.equal(passwd.content, PASSWD);
        const lines: string[] = dropIn.content.trimEnd().split("\n");
        assert.ok(
            lines.includes("auth_param basic program /usr/lib/squid/basic_ncsa_auth /etc/squid/egress.passwd"),
            dropIn.content,
        );
        const deny = lines.findIndex((l) => /^http_access deny !(egress_clients|localnet)$/.test(l));
        const allow = lines.indexOf("http_access allow egress_users");
        assert.ok(deny >= 0 && allow > deny, `source range first, then credentials:\n${dropIn.content}`);
        assert.ok(
            !lines.some((l) => /^http_access allow (egress_clients|localnet)$/.test(l)),
            "no allow by source range alone",
        );
    });
}
