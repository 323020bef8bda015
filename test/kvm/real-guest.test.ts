/**
 * The real-guest proof, driven as a user would: `egress serve` (its own process, the real CLI) on a
 * `kvm` stack of 2 members that boot a real Debian guest (built offline by scripts/build-guest-image.sh,
 * cached machine-wide) under QEMU TCG in the libvirt sandbox, over qemu+libssh with the host key
 * verified. Member 0: the shipped shared cloud-init/squid.yaml (squid on 3128), UEFI. Member 1: inline
 * cloud-init (squid on 8080), BIOS. The sandbox routes the host into the guest network, so the service
 * probes guests as on a LAN; its check URL is an origin server on the guest network's bridge.
 *
 * Asserts: the service's probes turn both healthy and report each guest's address as its egress IP; a
 * lease returns one; HTTP and CONNECT through each reach the origin; the guest agent (installed by the
 * product's vendor-data, from the image's local apt repository) reports the published addresses; the
 * user-data in the guest equals the source byte for byte; squid was configured before it started. Then
 * `virsh destroy` of one domain: the service heals it with no request. Then scale 2 → 1 while the higher
 * member is leased: it drains first. Then `egress destroy`: no domains, no volumes; `egress gc` finds
 * nothing. Prints boot-to-healthy per firmware and destroy-to-healthy.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { installationPrefix, memberObjectNames } from "../../components/kvm/naming";
import { installationOf } from "../helpers/installation";
import { PACKAGE_ROOT } from "../../src/engine/env";
import { cli, killServices, procProject, ProcProject, serve, ServeProcess } from "../helpers/processes";
import { kvmEntry, lv, Sandbox, startSandbox, teardown } from "./sandbox";
import { guestExec, guestImage, guestReadFile, serveFile, startOrigin, viaProxy } from "./guest";
import { settled, sleep, waitFor } from "../helpers/harness";

const STACK = "real-guest";
const PROBE_S = 2;
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
let p: ProcProject;
let svc: ServeProcess | undefined;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "egress-real-guest-"));
/** The members' domains: named after the installation id the stack's first `up` made (read once the guests are up). */
let doms: string[] = [];
let installation = "";

before(async () => {
    const built = guestImage();
    console.log(`guest image ${built.file} ready in ${built.ms} ms`);
    sb = startSandbox();
    assert.ok(
        sb.routed,
        "the sandbox routes the host into its guest network (scripts/libvirt-sandbox-setup.sh step 4c)",
    );
    image = await serveFile(built.file);
    origin = await startOrigin(sb.netns, sb.gateway);
    const { privateKey: _inline, ...ssh } = kvmEntry(sb, image).ssh;
    const entry = kvmEntry(sb, image, {
        ssh: { ...ssh, privateKeyPath: sb.privateKeyPath },
        hosts: [
            {
                name: "sandbox",
                address: "127.0.0.1",
                port: sb.sshPort,
                storagePool: sb.pool,
                network: sb.network,
                zone: "lab",
                domainType: "qemu",
            },
        ],
        images: {
            deb: { url: image.url, sha256: image.sha256, format: "qcow2", firmware: "uefi" },
            "deb-bios": { url: image.url, sha256: image.sha256, format: "qcow2", firmware: "bios" },
        },
        machineTypes: { small: { vcpu: 1, memoryMiB: 768 } },
        addressTimeoutSeconds: 600,
    });
    p = procProject(STACK, {
        "egress:providers": { lab: entry },
        "egress:pools": [
            {
                name: "rg",
                provider: "lab",
                replicas: 2,
                maxReplicas: 2,
                port: 3128,
                placement: { zone: "lab", image: "deb", machineType: "small" },
                cloudInit: { file: "cloud-init/squid.yaml" },
                members: [{ index: 1, port: 8080, placement: { image: "deb-bios" }, cloudInit: { inline: INLINE } }],
            },
        ],
    });
    fs.mkdirSync(path.join(p.dir, "cloud-init"));
    fs.writeFileSync(path.join(p.dir, "cloud-init", "squid.yaml"), SHARED);
});
after(async () => {
    killServices();
    if (p) cli(p, ["destroy", "--yes"], 600_000);
    origin?.stop();
    await teardown({ image, work });
    p?.cleanup();
});

type Proxy = {
    id: string;
    host: string;
    port: number;
    health: string;
    egressIp?: string;
    leased: boolean;
    lifecycle?: string;
};
const proxies = async (): Promise<Proxy[]> => (await svc!.call("GET", "/v1/proxies")).body.proxies;
const healthy = async (id: string) =>
    (await proxies()).find((x) => x.id === id && x.health === "healthy" && x.egressIp === x.host);

test(
    "egress serve on a kvm stack of 2 real guests: healthy, leased, proxying, byte-exact user-data; a destroyed domain heals itself; scale-down drains; destroy leaves nothing",
    { timeout: 2_700_000 },
    async () => {
        const t0 = Date.now();
        svc = await serve(p, [
            "--check-url",
            `http://${sb.gateway}:18080/ip`,
            "--probe-interval",
            String(PROBE_S),
            "--reconcile-interval",
            "5",
        ]);
        // Boot to healthy, per firmware: the service's own probes through squid, egress IP = the guest.
        const ready: Record<string, number> = {};
        let last: Proxy[] = [];
        await waitFor(
            "both guests healthy in /v1/proxies",
            async () => {
                last = await proxies();
                for (const x of last)
                    if (x.health === "healthy" && x.egressIp === x.host && !ready[x.id]) ready[x.id] = Date.now();
                return Object.keys(ready).length === 2;
            },
            1_200_000,
            2000,
        ).catch((e) => {
            // What the service saw and said: the only view of a failed boot once the after hook destroyed it.
            throw new Error(
                `${(e as Error).message}\n/v1/proxies: ${JSON.stringify(last)}\nservice log (last 60 lines but request logs):\n${svc!.logs
                    .filter((l) => !l.includes('"request completed"'))
                    .slice(-60)
                    .join("\n")}`,
            );
        });
        // A transient failure (a dropped upload) is run again by the reconcile loop: say how many it took.
        const ups = ((await svc.call("GET", "/v1/operations")).body.operations as { kind: string; status: string }[])
            .filter((o) => o.kind === "up")
            .map((o) => o.status);
        console.log(`start-up convergence: ${ups.length} up operation(s): ${ups.join(", ")}`);
        installation = installationOf(p).installation.id;
        doms = [0, 1].map((i) => memberObjectNames(installation, `rg-${i}`).domain);
        console.log(
            `serve start → healthy: rg-0 (uefi) ${((ready["rg-0"] - t0) / 1000).toFixed(1)} s, rg-1 (bios) ${((ready["rg-1"] - t0) / 1000).toFixed(1)} s (both booted at once on TCG)`,
        );
        const list = await proxies();
        assert.deepEqual(
            list.map((x) => [x.id, x.port]),
            [
                ["rg-0", 3128],
                ["rg-1", 8080],
            ],
        );
        for (const x of list)
            assert.match(
                x.host,
                new RegExp(`^${sb.gateway.replace(/\.1$/, "").replace(/\./g, "\\.")}\\.\\d+$`),
                `${x.id} published a sandbox address`,
            );

        // A lease returns one; HTTP and CONNECT through each reach the origin (from the host, as a crawler would).
        const lease = await svc.call("POST", "/v1/leases", { body: { pool: "rg", ttlSeconds: 120 } });
        assert.equal(lease.status, 201, JSON.stringify(lease.body));
        assert.ok(["rg-0", "rg-1"].includes(lease.body.lease.proxy.id), JSON.stringify(lease.body));
        for (const x of list) {
            assert.equal(
                viaProxy("", `${x.host}:${x.port}`, `http://${sb.gateway}:18080/plain`),
                "origin 18080 /plain",
                `${x.id}: HTTP through squid`,
            );
            assert.equal(
                viaProxy("", `${x.host}:${x.port}`, `http://${sb.gateway}:443/tunnel`, true),
                "origin 443 /tunnel",
                `${x.id}: CONNECT through squid`,
            );
        }
        assert.equal(
            (await svc.call("POST", `/v1/leases/${lease.body.lease.id}/release`, { body: { outcome: "ok" } })).status,
            200,
        );

        for (const [i, x] of list.entries()) await insideTheGuest(i, x);

        // `virsh destroy` one domain: the reconcile loop sees it shut off and heals it, with no request.
        const killedAt = Date.now();
        lv(["destroy", doms[0]]);
        const heal = await waitFor(
            "a heal operation for rg-0",
            async () => {
                const ops = (await svc!.call("GET", "/v1/operations")).body.operations as {
                    id: string;
                    kind: string;
                    members?: string[];
                }[];
                return ops.find((o) => o.kind === "heal" && o.members?.includes("rg-0"));
            },
            120_000,
            1000,
        );
        const healed = await settled(svc, heal.id, 1_200_000);
        assert.equal(healed.status, "succeeded", JSON.stringify(healed));
        assert.match(JSON.stringify(healed.reasons ?? healed), /shut off|gone/, "the heal says why");
        await waitFor("rg-0 healthy again", () => healthy("rg-0"), 900_000, 1000);
        const healS = (Date.now() - killedAt) / 1000;
        console.log(
            `virsh destroy → healthy again: ${healS.toFixed(1)} s = ${Math.ceil(healS / PROBE_S)} probe intervals of ${PROBE_S} s`,
        );
        assert.equal(lv(["domstate", doms[0]]).trim(), "running");

        // Scale 2 → 1 while rg-1 is leased: it drains (never leased again, still serving) until released.
        let held: { id: string; proxy: { id: string } } | undefined;
        const others: string[] = [];
        for (let i = 0; i < 2 && !held; i++) {
            const l = (await svc.call("POST", "/v1/leases", { body: { pool: "rg", ttlSeconds: 600 } })).body.lease;
            if (l.proxy.id === "rg-1") held = l;
            else others.push(l.id);
        }
        assert.ok(held, "rg-1 leased");
        for (const id of others) await svc.call("POST", `/v1/leases/${id}/release`, { body: { outcome: "ok" } });
        const scale = await svc.call("PUT", "/v1/pools/rg/replicas", { body: { replicas: 1 } });
        assert.equal(scale.status, 202, JSON.stringify(scale.body));
        await waitFor(
            "rg-1 draining",
            async () => (await proxies()).find((x) => x.id === "rg-1" && x.lifecycle === "draining"),
            60_000,
            500,
        );
        for (let i = 0; i < 3; i++) {
            const l = await svc.call("POST", "/v1/leases", { body: { pool: "rg", ttlSeconds: 30 } });
            assert.notEqual(l.body.lease?.proxy.id, "rg-1", "a draining member is never leased");
            if (l.body.lease)
                await svc.call("POST", `/v1/leases/${l.body.lease.id}/release`, { body: { outcome: "ok" } });
        }
        assert.equal(lv(["domstate", doms[1]]).trim(), "running", "still serving its lease while draining");
        const rg1 = list[1];
        assert.equal(
            viaProxy("", `${rg1.host}:${rg1.port}`, `http://${sb.gateway}:18080/drain`),
            "origin 18080 /drain",
            "the leased proxy still answers while draining",
        );
        assert.equal(
            (await svc.call("POST", `/v1/leases/${held.id}/release`, { body: { outcome: "ok" } })).status,
            200,
        );
        const down = await settled(svc, scale.body.operation.id, 600_000);
        assert.equal(down.status, "succeeded", JSON.stringify(down));
        assert.deepEqual(
            (await proxies()).map((x) => x.id),
            ["rg-0"],
        );
        assert.ok(!lv(["list", "--all", "--name"]).includes(doms[1]), "rg-1's domain is deleted after the drain");

        // Stop the service, destroy with the CLI: nothing left, gc finds nothing.
        svc.child.kill("SIGTERM");
        await svc.exited;
        const t1 = Date.now();
        const destroyed = cli(p, ["destroy", "--yes"], 600_000);
        assert.equal(destroyed.code, 0, destroyed.stderr);
        console.log(`destroy ${Date.now() - t1} ms`);
        const prefix = installationPrefix(installation);
        assert.deepEqual(
            lv(["list", "--all", "--name"])
                .split("\n")
                .map((s) => s.trim())
                .filter((n) => n.startsWith(prefix)),
            [],
            "no domains left",
        );
        assert.deepEqual(
            fs.readdirSync(sb.poolDir).filter((f) => f.startsWith(prefix) || f.startsWith("base-lab-")),
            [],
            "no volumes left",
        );
        const gc = cli(p, ["gc", "--json"]);
        assert.equal(gc.code, 0, `egress gc runs: ${gc.stderr}`);
        assert.deepEqual(JSON.parse(gc.stdout).orphans, [], "egress gc finds nothing");
    },
);

/** What only the guest can tell: the agent (installed by vendor-data) and its view of the address, user-data byte for byte, squid started once. */
async function insideTheGuest(i: number, x: Proxy): Promise<void> {
    let agentOut = "";
    for (const deadline = Date.now() + 300_000; Date.now() < deadline; await sleep(3000)) {
        try {
            agentOut = lv(["domifaddr", doms[i], "--source", "agent"]);
            if (agentOut.includes(x.host)) break;
        } catch {
            // the agent is not connected yet
        }
    }
    assert.match(
        agentOut,
        new RegExp(`ipv4\\s+${x.host.replace(/\./g, "\\.")}/`),
        `${x.id}: the agent reports ${x.host}`,
    );
    const dpkg = guestReadFile(doms[i], "/var/log/dpkg.log").toString();
    assert.match(dpkg, / install qemu-guest-agent:amd64 /, `${x.id}: qemu-guest-agent installed at boot`);
    const vendor = await guestExec(doms[i], [
        "/bin/sh",
        "-c",
        "ls /var/lib/cloud/instance/scripts/vendor/ && grep -l 'install and enable qemu-guest-agent' /var/lib/cloud/instance/scripts/vendor/*",
    ]);
    assert.equal(vendor.code, 0, `${x.id}: the vendor-data script ran: ${vendor.out}`);
    assert.deepEqual(
        guestReadFile(doms[i], "/var/lib/cloud/instance/user-data.txt"),
        i === 0 ? SHARED : Buffer.from(INLINE),
        `${x.id}: user-data byte for byte`,
    );
    // squid read our file when it first started: started once, never restarted, no repeated http_port.
    const journal = await guestExec(doms[i], ["/bin/journalctl", "-b", "-u", "squid", "-o", "cat", "--no-pager"]);
    assert.equal(journal.out.match(/^Started squid/gm)?.length, 1, `${x.id}: squid started once:\n${journal.out}`);
    assert.doesNotMatch(journal.out, /Stopping squid/, `${x.id}: squid never restarted`);
    const cacheLog = guestReadFile(doms[i], "/var/log/squid/cache.log").toString();
    assert.doesNotMatch(cacheLog, /duplicate|already (in use|listening)/i, `${x.id}: no repeated http_port`);
}
