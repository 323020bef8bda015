/**
 * NoCloud seed ISO (volume label `cidata`): user-data byte for byte, meta-data, vendor-data. Built with
 * xorriso or genisoimage (Debian packages); we never hand-roll ISO9660. Plain functions, serialized
 * with the SeedDisk provider.
 */

export interface SeedContent {
    /** Cloud-init user-data, byte for byte (it may be binary: gzip). */
    userData: Buffer;
    instanceId: string;
    hostname: string;
    /** Add the qemu-guest-agent bootstrap as vendor-data. */
    installGuestAgent: boolean;
    /** Extra vendor-data from config, placed beside the bootstrap (MIME multipart) or alone. */
    vendorData?: string;
}

/**
 * Vendor-data script that installs and enables qemu-guest-agent. A shell script (not cloud-config):
 * cloud-init runs it after package installation and before runcmd, and the default mergers would drop
 * a cloud-config vendor-data in favour of the user's.
 */
export const GUEST_AGENT_SCRIPT = `#!/bin/sh
# egress: install and enable qemu-guest-agent so libvirt can read this guest's addresses.
if ! command -v qemu-ga >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y qemu-guest-agent || { apt-get update && apt-get install -y qemu-guest-agent; }
  elif command -v dnf >/dev/null 2>&1; then dnf install -y qemu-guest-agent
  elif command -v yum >/dev/null 2>&1; then yum install -y qemu-guest-agent
  elif command -v apk >/dev/null 2>&1; then apk add qemu-guest-agent
  fi
fi
systemctl enable --now qemu-guest-agent 2>/dev/null || service qemu-guest-agent start 2>/dev/null || true
`;

/** meta-data (YAML). Values are quoted JSON strings, valid YAML whatever they contain. */
export function metaData(c: Pick<SeedContent, "instanceId" | "hostname">): string {
    return `instance-id: ${JSON.stringify(c.instanceId)}\nlocal-hostname: ${JSON.stringify(c.hostname)}\nhostname: ${JSON.stringify(c.hostname)}\n`;
}

/**
 * vendor-data: the bootstrap script alone, the extra vendor data alone, or both as MIME multipart with
 * each part declared text/plain (cloud-init then recognises each part by its first line: `#!`,
 * `#cloud-config`, ...). Undefined when there is nothing to send.
 */
export function vendorData(
    c: Pick<SeedContent, "installGuestAgent" | "vendorData">,
    boundary = "==egress-vendor-data==",
): string | undefined {
    const parts = [c.installGuestAgent ? GUEST_AGENT_SCRIPT : undefined, c.vendorData].filter((p): p is string => !!p);
    if (parts.length === 0) return undefined;
    if (parts.length === 1) return parts[0];
    const body = parts
        .map(
            (p, i) =>
                `--${boundary}\nContent-Type: text/plain; charset="utf-8"\nMIME-Version: 1.0\nContent-Transfer-Encoding: 8bit\nContent-Disposition: attachment; filename="part-${i + 1}"\n\n${p}${p.endsWith("\n") ? "" : "\n"}`,
        )
        .join("");
    return `Content-Type: multipart/mixed; boundary="${boundary}"\nMIME-Version: 1.0\n\n${body}--${boundary}--\n`;
}

/** The files of the seed, name → content. */
export function seedFiles(c: SeedContent): Record<string, string | Buffer> {
    const files: Record<string, string | Buffer> = { "user-data": c.userData, "meta-data": metaData(c) };
    const v = vendorData(c);
    if (v !== undefined) files["vendor-data"] = v;
    return files;
}

/** sha256 over the seed's files: changes exactly when the ISO's content would. */
export function seedDigest(c: SeedContent): string {
    const crypto = require("node:crypto") as typeof import("node:crypto");
    const h = crypto.createHash("sha256");
    for (const [name, content] of Object.entries(seedFiles(c)).sort(([a], [b]) => (a < b ? -1 : 1)))
        h.update(`${name}\0${Buffer.byteLength(content)}\0`).update(content);
    return h.digest("hex");
}

/** Finds an ISO tool on PATH, preferring xorriso. */
export function findIsoTool(): { cmd: string; args: string[] } {
    const fs = require("node:fs") as typeof import("node:fs");
    const path = require("node:path") as typeof import("node:path");
    const onPath = (b: string) =>
        (process.env.PATH ?? "/usr/bin:/bin").split(":").some((d) => d && fs.existsSync(path.join(d, b)));
    if (onPath("xorriso")) return { cmd: "xorriso", args: ["-as", "mkisofs"] };
    if (onPath("genisoimage")) return { cmd: "genisoimage", args: [] };
    if (onPath("mkisofs")) return { cmd: "mkisofs", args: [] };
    throw new Error(
        "building the cloud-init seed ISO needs xorriso or genisoimage on the machine running Pulumi (apt-get install xorriso)",
    );
}

/** Writes the seed files into `dir` and builds `dir/seed.iso`; returns its path. */
export async function buildSeedIso(c: SeedContent, dir: string): Promise<string> {
    const fs = require("node:fs") as typeof import("node:fs");
    const path = require("node:path") as typeof import("node:path");
    const cp = require("node:child_process") as typeof import("node:child_process");
    const tool = findIsoTool();
    const filesDir = path.join(dir, "files");
    fs.mkdirSync(filesDir, { recursive: true, mode: 0o700 });
    const names = Object.entries(seedFiles(c)).map(([name, content]) => {
        fs.writeFileSync(path.join(filesDir, name), content, { mode: 0o600 });
        return path.join(filesDir, name);
    });
    const out = path.join(dir, "seed.iso");
    const args = [...tool.args, "-quiet", "-output", out, "-volid", "cidata", "-joliet", "-rock", ...names];
    await new Promise<void>((resolve, reject) => {
        const child = cp.execFile(tool.cmd, args, { timeout: 60000 }, (err, _stdout, stderr) =>
            err
                ? reject(new Error(`${tool.cmd} failed building the seed ISO: ${String(stderr).trim() || err.message}`))
                : resolve(),
        );
        child.stdin?.end();
    });
    return out;
}
