/**
 * The real-guest proof: a `kvm` stack of 2 members that boot a real Debian guest (built offline by
 * scripts/build-guest-image.sh, cached machine-wide) under QEMU TCG in the libvirt sandbox, brought up by
 * the real engine over qemu+libssh with the host key verified. Member 0: the shipped shared
 * cloud-init/squid.yaml (squid on 3128), UEFI. Member 1: inline cloud-init (squid on 8080), BIOS.
 * Asserts: both boot and the guest agent (installed by the product's vendor-data, from the image's local
 * apt repository) reports the published addresses; HTTP and CONNECT through each proxy reach an origin
 * server in the sandbox's namespace; the user-data in the guest equals the source byte for byte; squid
 * was configured before it started (one start, no restart). Then destroy: no domains, no volumes, and
 * `egress gc` finds nothing. Prints boot-to-proxy per firmware.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { tempProject } from "../helpers/project";
import { memberObjectNames, stackPrefix } from "../../components/kvm/naming";
import { PACKAGE_ROOT } from "../../src/engine/env";
import { kvmEntry, lv, Sandbox, startSandbox, teardown } from "./sandbox";
import { guestExec, guestImage, guestReadFile, serveFile, startOrigin, viaProxy } from "./guest";

const STACK = "real-guest";
const SHARED = fs.readFileSync(path.join(PACKAGE_ROOT, "cloud-init", "squid.yaml"));
const INLINE = [
    "#cloud-config",
    "packages: [squid]",
    "write_files:",
    "  - path: /etc/squid/conf.d/egress.conf",
    "    content: |",
    "      http_port 8080",
    "      visible_hostname egress-proxy-1",
    "      http_access allow localnet",
    "runcmd:",
    "  - [systemctl, enable, --now, squid]",
    "",
].join("\n");

let sb: Sandbox;
let image: Awaited<ReturnType<typeof serveFile>>;
let origin: Awaited<ReturnType<typeof startOrigin>> | undefined;
let project: ReturnType<typeof tempProject>;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "egress-real-guest-"));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

before(async () => {
    const built = guestImage();
    console.log(`guest image ${built.file} ready in ${built.ms} ms`);
    sb = startSandbox();
    image = await serveFile(built.file);
    origin = await startOrigin(sb.netns, sb.gateway);
    const entry = kvmEntry(sb, image, {
        hosts: [{ name: "sandbox", address: "127.0.0.1", port: sb.sshPort, storagePool: sb.pool, network: sb.network, zone: "lab", domainType: "qemu" }],
        images: {
            deb: { url: image.url, sha256: image.sha256, format: "qcow2", firmware: "uefi" },
            "deb-bios": { url: image.url, sha256: image.sha256, format: "qcow2", firmware: "bios" },
        },
        machineTypes: { small: { vcpu: 1, memoryMiB: 768 } },
        addressTimeoutSeconds: 600,
    });
    project = tempProject(STACK, {
        "egress:providers": { lab: entry },
        "egress:pools": [{
            name: "rg", provider: "lab", replicas: 2, maxReplicas: 2, port: 3128,
            placement: { zone: "lab", image: "deb", machineType: "small" },
            cloudInit: { file: "cloud-init/squid.yaml" },
            members: [{ index: 1, port: 8080, placement: { image: "deb-bios" }, cloudInit: { inline: INLINE } }],
        }],
    });
    fs.mkdirSync(path.join(project.dir, "cloud-init"));
    fs.writeFileSync(path.join(project.dir, "cloud-init", "squid.yaml"), SHARED);
});
after(async () => {
    origin?.stop();
    await teardown({ project, image, work });
});

/** Watches a domain from the outside while `up` runs: when libvirt runs it, and when its proxy answers. */
function watch(domain: string, port: number, stop: () => boolean): Promise<{ running?: number; proxy?: number; ip?: string }> {
    const marks: { running?: number; proxy?: number; ip?: string } = {};
    return (async () => {
        while (!stop() && marks.proxy === undefined) {
            const state = cp.spawnSync("virsh", ["-q", "-c", "qemu:///system", "domstate", domain], { encoding: "utf8" }).stdout.trim();
            if (marks.running === undefined && state === "running") marks.running = Date.now();
            if (marks.running !== undefined && !marks.ip) {
                const leases = cp.spawnSync("virsh", ["-q", "-c", "qemu:///system", "domifaddr", domain, "--source", "lease"], { encoding: "utf8" }).stdout;
                marks.ip = /ipv4\s+([\d.]+)\//.exec(leases)?.[1];
            }
            if (marks.ip && viaProxy(sb.netns, `${marks.ip}:${port}`, `http://${sb.gateway}:18080/boot`, false, 3).startsWith("origin 18080")) marks.proxy = Date.now();
            await sleep(1000);
        }
        return marks;
    })();
}

test("kvm stack of 2 real guests (UEFI 3128 shared cloud-init, BIOS 8080 inline): boot, agent, proxy, byte-exact user-data, destroy", { timeout: 1_800_000 }, async () => {
    const doms = [0, 1].map((i) => memberObjectNames("egress", STACK, `rg-${i}`).domain);
    let done = false;
    const watchers = [watch(doms[0], 3128, () => done), watch(doms[1], 8080, () => done)];
    const t0 = Date.now();
    await project.driver.up();
    console.log(`up (2 real guests) ${Date.now() - t0} ms`);
    const proxies = await project.driver.proxies();
    assert.deepEqual(proxies.map((p) => [p.id, p.port]), [["rg-0", 3128], ["rg-1", 8080]]);
    for (const p of proxies) assert.match(p.host, new RegExp(`^${sb.gateway.replace(/\.1$/, "").replace(/\./g, "\\.")}\\.\\d+$`), `${p.id} published a sandbox address`);

    // Both answer through the bridge (HTTP, and CONNECT to the origin's 443).
    for (const p of proxies) {
        let body = "";
        for (const deadline = Date.now() + 300_000; Date.now() < deadline && !body; await sleep(2000)) body = viaProxy(sb.netns, `${p.host}:${p.port}`, `http://${sb.gateway}:18080/plain`);
        assert.equal(body, "origin 18080 /plain", `${p.id}: HTTP through squid`);
        assert.equal(viaProxy(sb.netns, `${p.host}:${p.port}`, `http://${sb.gateway}:443/tunnel`, true), "origin 443 /tunnel", `${p.id}: CONNECT through squid`);
    }
    done = true;
    const marks = await Promise.all(watchers);
    for (const [i, fw] of [[0, "uefi"], [1, "bios"]] as const) {
        const m = marks[i];
        console.log(`boot-to-proxy ${fw}: ${m.running && m.proxy ? ((m.proxy - m.running) / 1000).toFixed(1) : "?"} s after the domain ran (lease ${m.ip ?? "?"})`);
    }

    // The agent, installed by vendor-data (not in the image), reports the published addresses.
    for (const [i, p] of proxies.entries()) {
        let agentOut = "";
        for (const deadline = Date.now() + 300_000; Date.now() < deadline; await sleep(3000)) {
            try {
                agentOut = lv(["domifaddr", doms[i], "--source", "agent"]);
                if (agentOut.includes(p.host)) break;
            } catch {
                // the agent is not connected yet
            }
        }
        assert.match(agentOut, new RegExp(`ipv4\\s+${p.host.replace(/\./g, "\\.")}/`), `${p.id}: the agent reports ${p.host}`);
        const dpkg = guestReadFile(doms[i], "/var/log/dpkg.log").toString();
        assert.match(dpkg, / install qemu-guest-agent:amd64 /, `${p.id}: qemu-guest-agent installed at boot`);
        const vendor = await guestExec(doms[i], ["/bin/sh", "-c", "ls /var/lib/cloud/instance/scripts/vendor/ && grep -l 'install and enable qemu-guest-agent' /var/lib/cloud/instance/scripts/vendor/*"]);
        assert.equal(vendor.code, 0, `${p.id}: the vendor-data script ran: ${vendor.out}`);

        // User-data byte for byte, as cloud-init received it from the seed.
        assert.deepEqual(guestReadFile(doms[i], "/var/lib/cloud/instance/user-data.txt"), i === 0 ? SHARED : Buffer.from(INLINE), `${p.id}: user-data byte for byte`);

        // squid read our file when it first started: started once, never restarted, no repeated http_port.
        const journal = await guestExec(doms[i], ["/bin/journalctl", "-b", "-u", "squid", "-o", "cat", "--no-pager"]);
        assert.equal(journal.out.match(/^Started squid/gm)?.length, 1, `${p.id}: squid started once:\n${journal.out}`);
        assert.doesNotMatch(journal.out, /Stopping squid/, `${p.id}: squid never restarted`);
        const cacheLog = guestReadFile(doms[i], "/var/log/squid/cache.log").toString();
        assert.doesNotMatch(cacheLog, /duplicate|already (in use|listening)/i, `${p.id}: no repeated http_port`);
    }

    const t1 = Date.now();
    await project.driver.destroy();
    console.log(`destroy ${Date.now() - t1} ms`);
    const prefix = stackPrefix("egress", STACK);
    assert.deepEqual(lv(["list", "--all", "--name"]).split("\n").map((s) => s.trim()).filter((n) => n.startsWith(prefix)), [], "no domains left");
    assert.deepEqual(fs.readdirSync(sb.poolDir).filter((f) => f.startsWith(prefix) || f.startsWith("base-lab-")), [], "no volumes left");
    const gc = cp.spawnSync(process.execPath, [path.join(PACKAGE_ROOT, "dist", "src", "cli.js"), "gc", "--json", "--stack", STACK, "--cwd", project.dir], { env: { ...process.env, ...project.env }, encoding: "utf8", timeout: 120_000 });
    assert.equal(gc.status, 0, `egress gc runs: ${gc.stderr}`);
    assert.deepEqual(JSON.parse(gc.stdout).orphans, [], "egress gc finds nothing");
});
