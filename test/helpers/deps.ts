import * as cp from "node:child_process";
import * as path from "node:path";
import { PACKAGE_ROOT } from "../../src/engine/env";

let done = false;

/**
 * The Debian packages tests run for real (sshd, squid, chromium, promtool, xorriso, jq, libvirt...),
 * installed by scripts/install-test-deps.sh when missing. `npm test` runs it once up front and says so
 * in EGRESS_TEST_DEPS_INSTALLED; a test file run on its own on a new machine gets them here instead of
 * failing on what an earlier suite would have installed. When everything is present it costs one
 * dpkg-query per package. Throws (never skips) when they cannot be installed.
 */
export function ensureTestPackages(): void {
    if (done || process.env.EGRESS_TEST_DEPS_INSTALLED === "1") return;
    const r = cp.spawnSync("bash", [path.join(PACKAGE_ROOT, "scripts", "install-test-deps.sh")], {
        encoding: "utf8",
        timeout: 1_800_000,
    });
    if (r.status !== 0)
        throw new Error(
            `scripts/install-test-deps.sh failed (${r.status ?? r.signal}): ${(r.stderr ?? "").trim().split("\n").slice(-10).join("\n")}`,
        );
    done = true;
}
