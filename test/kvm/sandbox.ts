/**
 * The real libvirt sandbox the KVM tests run against: libvirtd + QEMU (TCG) in a network namespace and
 * an sshd on 127.0.0.1, started by scripts/libvirt-sandbox-setup.sh and stopped by -teardown.sh.
 * Setup failing fails the tests (never a skip). Several test files may share one sandbox: each registers
 * its pid and teardown stops the daemons only after the last user left.
 */
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { PACKAGE_ROOT } from "../../src/engine/env";
import type { KvmConnection } from "../../components/kvm/libvirt";
import type { KvmProviderConfig } from "../../components/kvm/config";

export interface Sandbox {
    privateKey: string;
    /** The same key as a file (for stacks written as YAML, where an inline key would have to be a secret). */
    privateKeyPath: string;
    knownHosts: string;
    sshPort: number;
    pool: string;
    poolDir: string;
    bridge: string;
    /** A libvirt-managed network (bridge address + DHCP, leases readable by `domifaddr --source lease`) for real guests. */
    network: string;
    /** The network's bridge address inside `netns`: where tests run origin servers guests can reach. */
    gateway: string;
    /** The network namespace libvirtd, its guests and networks live in. */
    netns: string;
    /** The host routes into the guest network (a veth into `netns`): a service on the host reaches guests. */
    routed: boolean;
    setupMs: number;
}

const BASE = path.join(os.tmpdir(), "egress-libvirt-sandbox");
export const BRIDGE = "egbr0";

function run(cmd: string, args: string[], env: Record<string, string> = {}, timeout = 180_000): string {
    const r = cp.spawnSync(cmd, args, { encoding: "utf8", timeout, env: { ...process.env, BASE, ...env } });
    if (r.status !== 0)
        throw new Error(
            `${cmd} ${args.join(" ")} failed (${r.status ?? r.signal}): ${(r.stderr || r.stdout || "").trim().split("\n").slice(-8).join("\n")}`,
        );
    return r.stdout;
}

/** Starts (or joins) the sandbox and makes a bridge for guest NICs inside its network namespace. */
export function startSandbox(): Sandbox {
    const t0 = Date.now();
    run(
        "bash",
        [path.join(PACKAGE_ROOT, "scripts", "libvirt-sandbox-setup.sh")],
        { SANDBOX_USER: String(process.pid) },
        600_000,
    );
    const env = Object.fromEntries(
        fs
            .readFileSync(path.join(BASE, "env"), "utf8")
            .split(/\s+/)
            .map((w) => /^(\w+)='([^']*)'$/.exec(w.replace(/^export /, "")))
            .filter((m): m is RegExpExecArray => !!m)
            .map((m) => [m[1], m[2]]),
    );
    const netns = env.SANDBOX_NETNS;
    const ns = (args: string[]) => (netns ? ["netns", "exec", netns, "ip", ...args] : args);
    const links = run("ip", ns(["-o", "link", "show"]));
    if (!links.includes(`${BRIDGE}:`)) run("ip", ns(["link", "add", BRIDGE, "type", "bridge"]));
    run("ip", ns(["link", "set", BRIDGE, "up"]));
    return {
        privateKey: fs.readFileSync(env.SANDBOX_SSH_KEY, "utf8"),
        privateKeyPath: env.SANDBOX_SSH_KEY,
        knownHosts: fs.readFileSync(env.SANDBOX_KNOWN_HOSTS, "utf8"),
        sshPort: Number(env.SANDBOX_SSH_PORT),
        pool: env.SANDBOX_POOL,
        poolDir: env.SANDBOX_POOL_DIR,
        bridge: BRIDGE,
        network: env.SANDBOX_GUEST_NETWORK,
        gateway: env.SANDBOX_GUEST_GATEWAY,
        netns,
        routed: env.SANDBOX_GUEST_ROUTED === "1",
        setupMs: Date.now() - t0,
    };
}

export function stopSandbox(): number {
    const t0 = Date.now();
    run("bash", [path.join(PACKAGE_ROOT, "scripts", "libvirt-sandbox-teardown.sh")], {
        SANDBOX_USER: String(process.pid),
    });
    return Date.now() - t0;
}

/**
 * A test file's `after`: destroys its stack (errors ignored: the test may have destroyed it already),
 * stops its image server, removes its project and work dir, then leaves the sandbox (logging how long).
 */
export async function teardown(parts: {
    project?: { driver: { destroy(): Promise<unknown> }; cleanup(): void };
    image?: { close(): Promise<void> };
    work?: string;
}): Promise<void> {
    await parts.project?.driver.destroy().catch(() => undefined);
    await parts.image?.close();
    parts.project?.cleanup();
    if (parts.work) fs.rmSync(parts.work, { recursive: true, force: true });
    console.log(`sandbox teardown ${stopSandbox()} ms`);
}

/** A known_hosts line for the sandbox's address and port with a key that is not the sandbox's. */
export function wrongKnownHosts(sb: Sandbox): string {
    return `[127.0.0.1]:${sb.sshPort} ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n`;
}

export function connection(sb: Sandbox, over: Partial<KvmConnection> = {}): KvmConnection {
    return {
        host: "sandbox",
        user: "root",
        address: "127.0.0.1",
        port: sb.sshPort,
        knownHosts: sb.knownHosts,
        ...over,
    };
}

/** A `type: kvm` entry pointing at the sandbox (TCG, bridge NIC, no address wait). */
export function kvmEntry(
    sb: Sandbox,
    image: { url: string; sha256: string },
    over: Partial<KvmProviderConfig> = {},
): KvmProviderConfig {
    return {
        type: "kvm",
        ssh: { user: "root", privateKey: sb.privateKey, knownHosts: sb.knownHosts },
        hosts: [
            {
                name: "sandbox",
                address: "127.0.0.1",
                port: sb.sshPort,
                storagePool: sb.pool,
                bridge: sb.bridge,
                zone: "lab",
                domainType: "qemu",
            },
        ],
        images: { tiny: { url: image.url, sha256: image.sha256, format: "qcow2", firmware: "uefi" } },
        machineTypes: { small: { vcpu: 1, memoryMiB: 128 } },
        installGuestAgent: true,
        addressTimeoutSeconds: 0,
        ...over,
    };
}

/** Local virsh (qemu:///system) for asserting libvirt's view without going through the code under test. */
export function lv(args: string[]): string {
    return run("virsh", ["-q", "-c", "qemu:///system", ...args], {}, 60_000);
}

/** A small qcow2 made by qemu-img (it need not boot), served by a loopback HTTP server. */
export async function serveTinyImage(
    dir: string,
    sizeMiB = 16,
): Promise<{ url: string; sha256: string; file: string; close(): Promise<void> }> {
    const crypto = await import("node:crypto");
    const file = path.join(dir, "tiny.qcow2");
    run("qemu-img", ["create", "-q", "-f", "qcow2", file, `${sizeMiB}M`]);
    const sha256 = crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");
    const server = http.createServer((req, res) => {
        if (req.url !== "/tiny.qcow2") return void res.writeHead(404).end();
        res.writeHead(200, { "content-type": "application/octet-stream" });
        fs.createReadStream(file).pipe(res);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as net.AddressInfo).port;
    return {
        url: `http://127.0.0.1:${port}/tiny.qcow2`,
        sha256,
        file,
        close: () =>
            new Promise<void>((r) => {
                server.closeAllConnections();
                server.close(() => r());
            }),
    };
}

/** Extracts one file from an ISO with xorriso (independent of how it was built). */
export function isoFile(iso: string, name: string, dir: string): Buffer {
    const out = path.join(dir, `extract-${name}-${Date.now()}`);
    run("xorriso", ["-osirrox", "on", "-indev", iso, "-extract", `/${name}`, out], {}, 60_000);
    return fs.readFileSync(out);
}

export function isoLabel(iso: string): string {
    return run("isoinfo", ["-d", "-i", iso]).match(/Volume id:\s*(\S+)/)?.[1] ?? "";
}
