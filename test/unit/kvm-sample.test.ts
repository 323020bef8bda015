/**
 * The KVM sample stack runs as shipped apart from its one documented placeholder (the image sha256):
 * the real loader validates it, `~` in its key path is expanded, every member's port agrees with the
 * cloud-init it gets, and the placeholder is explained next to it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { planMembers, readCloudInitText, squidHttpPorts } from "../../src/model";
import { loadStackConfig } from "../../src/config";
import { PACKAGE_ROOT } from "../../src/engine/env";

const file = path.join(PACKAGE_ROOT, "stacks", "Pulumi.example-kvm.yaml");

test("the shipped KVM sample loads and validates with the real config loader", () => {
    const cfg = loadStackConfig(PACKAGE_ROOT, "example-kvm");
    const entry = cfg.providers["kvm-home"];
    assert.equal(entry.type, "kvm");
    if (entry.type !== "kvm") return;
    assert.equal(entry.ssh.privateKeyPath, path.join(os.homedir(), ".ssh", "egress_ed25519"), "`~/` is expanded");
    const plans = planMembers(cfg.pools[0]);
    assert.equal(plans.length, 5);
    for (const p of plans) {
        // No http_port line means Debian's squid.conf default, 3128 (repeating it is an error in squid's log).
        const ports = squidHttpPorts(readCloudInitText(p.cloudInit!, PACKAGE_ROOT));
        const listens = ports.length ? ports : [3128];
        assert.ok(listens.includes(p.port), `${p.name}: squid listens on port ${p.port} (${listens.join(", ")})`);
    }
});

test("its only placeholder is the image sha256, and the file says so next to it", () => {
    const text = fs.readFileSync(file, "utf8");
    const zeros = text.split("\n").findIndex((l) => /sha256: "0{64}"/.test(l));
    assert.ok(zeros > 0, "the sample's sha256 is the all-zero placeholder");
    const before = text
        .split("\n")
        .slice(Math.max(0, zeros - 5), zeros)
        .join("\n");
    assert.match(before, /PLACEHOLDER/);
    assert.match(before, /sha256sum/);
    assert.match(text.split("\n").slice(0, 5).join("\n"), /placeholder: images\.debian-13\.sha256/);
    assert.match(
        fs.readFileSync(path.join(PACKAGE_ROOT, "docs", "kvm.md"), "utf8"),
        /placeholder sha256/i,
        "docs/kvm.md explains it too",
    );
});
