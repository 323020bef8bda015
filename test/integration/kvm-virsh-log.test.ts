/**
 * Every virsh call leaves a debug line in the service's log: command, host, duration, exit code and the
 * stage of a failure, and never an argument (XML bodies), the URI or key material. Real virsh against
 * real sockets on 127.0.0.1: a refused port, and a real sshd whose host key is not the one expected.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { KvmConnection, VirshCall, virshCommandNames, withLibvirt } from "../../components/kvm/libvirt";
import { kvmChecker } from "../../components/kvm/health";
import { kvmGoneCheck } from "../../components/kvm/gone";
import type { KvmProviderConfig } from "../../components/kvm/config";
import { createLogger } from "../../src/log/logger";
import { closedPort } from "../fixtures/ports";
import { startLoopbackSshd, type LoopbackSshd } from "../helpers/sshd";
import { TEST_INSTALLATION } from "../helpers/installation";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-virsh-log-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function keygen(name: string): { key: string; pub: string } {
    const file = path.join(dir, name);
    cp.execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", file]);
    return { key: fs.readFileSync(file, "utf8"), pub: fs.readFileSync(`${file}.pub`, "utf8").trim() };
}
const client = keygen("client");
const other = keygen("other-host");
const XML = "<domain><name>egress-secret-body</name></domain>";

/** What must never be in a line: the XML argument, the key, the temp files the session made for it. */
function assertNothingSecret(text: string): void {
    for (const bad of [
        "<domain",
        "egress-secret-body",
        "PRIVATE KEY",
        client.key.split("\n")[1],
        "keyfile",
        "known_hosts",
        "egress-kvm-",
    ])
        assert.ok(!text.includes(bad), `no ${JSON.stringify(bad)} in ${text}`);
}

let sshd: LoopbackSshd;
before(async () => {
    sshd = await startLoopbackSshd(dir, [client.pub]);
});
after(() => sshd?.stop());

test("command names only: a batch lists its commands, arguments never appear", () => {
    assert.equal(virshCommandNames(["list", "--all", "--name"]), "list");
    assert.equal(
        virshCommandNames(["echo @@egress-item-0@@ ; domblklist 'a' ; echo @@egress-item-1@@ ; vol-info 'b'"]),
        "echo;domblklist;echo;vol-info",
    );
    assert.equal(virshCommandNames(["metadata", "d", "--uri", "u", "--set", XML]), "metadata");
});

test("a refused port: one call record per try, exit code 1, stage tcp, no argument or key in it", async () => {
    const port = await closedPort();
    const conn: KvmConnection = {
        host: "rack-1",
        user: "root",
        address: "127.0.0.1",
        port,
        knownHosts: `[127.0.0.1]:${port} ${other.pub}\n`,
    };
    const calls: VirshCall[] = [];
    await assert.rejects(
        withLibvirt(conn, client.key, (virsh) => virsh(["metadata", "egress-x", "--uri", "u", "--set", XML]), {
            member: "web-0",
            retry: { tries: 2, firstDelayMs: 5, maxDelayMs: 5, maxTotalMs: 10_000 },
            onCall: (c) => calls.push(c),
        }),
        /Connection refused/,
    );
    assert.equal(calls.length, 2, "a connect that failed is retried, and each try is a call");
    for (const c of calls) {
        assert.deepEqual(
            { ...c, durationMs: 0 },
            {
                command: "metadata",
                host: "rack-1",
                target: `root@127.0.0.1:${port}`,
                member: "web-0",
                durationMs: 0,
                exitCode: 1,
                ok: false,
                stage: "tcp",
            },
        );
        assert.ok(
            Number.isInteger(c.durationMs) && c.durationMs >= 0 && c.durationMs < 30_000,
            `a duration in ms (got ${c.durationMs})`,
        );
    }
    assertNothingSecret(JSON.stringify(calls));
});

test("the provider check and the gone check log each virsh call at debug, through the service's logger", async () => {
    const lines: string[] = [];
    const log = createLogger({ level: "debug", destination: { write: (l: string) => void lines.push(l) } });
    const entry = {
        type: "kvm",
        ssh: { user: "root", privateKey: client.key, knownHosts: `[127.0.0.1]:${sshd.port} ${other.pub}\n` },
        hosts: [
            {
                name: "rack-1",
                address: "127.0.0.1",
                port: sshd.port,
                storagePool: "default",
                bridge: "br0",
                domainType: "qemu",
            },
        ],
        images: {},
        machineTypes: {},
        installGuestAgent: false,
        addressTimeoutSeconds: 0,
    } as unknown as KvmProviderConfig;

    const [verdict] = await kvmChecker("lab", entry, { timeoutMs: 5000, log }).check();
    assert.deepEqual([verdict.ok, verdict.stage], [false, "host-key"], verdict.message);
    await kvmGoneCheck({ runDir: dir, project: "egress", stack: "t", installation: TEST_INSTALLATION, entry, log })([
        { id: "web-0", pool: "web", provider: "lab" } as never,
    ]);

    const calls = lines.map((l) => JSON.parse(l)).filter((l) => l.component === "virsh");
    assert.deepEqual(
        calls.map((c) => [c.level, c.command, c.host, c.target, c.exitCode, c.ok, c.stage]),
        [
            [20, "version", "rack-1", `root@127.0.0.1:${sshd.port}`, 1, false, "host-key"],
            [20, "list", "rack-1", `root@127.0.0.1:${sshd.port}`, 1, false, "host-key"],
        ],
        lines.join("\n"),
    );
    for (const c of calls) {
        assert.equal(typeof c.durationMs, "number");
        assert.match(c.msg, new RegExp(`^virsh ${c.command} on rack-1: failed \\(host-key\\), exit 1, \\d+ ms$`));
    }
    assertNothingSecret(lines.join("\n"));
});

test("at the default level (info) no virsh line is written", async () => {
    const lines: string[] = [];
    const log = createLogger({ level: "info", destination: { write: (l: string) => void lines.push(l) } });
    const port = await closedPort();
    const conn: KvmConnection = {
        host: "rack-1",
        user: "root",
        address: "127.0.0.1",
        port,
        knownHosts: `[127.0.0.1]:${port} ${other.pub}\n`,
    };
    const { virshDebugLog } = await import("../../components/kvm/virsh-log");
    await assert.rejects(
        withLibvirt(conn, client.key, (virsh) => virsh(["list"]), {
            retry: { tries: 1, firstDelayMs: 1, maxDelayMs: 1, maxTotalMs: 1000 },
            onCall: virshDebugLog(log),
        }),
    );
    assert.deepEqual(lines, []);
});
