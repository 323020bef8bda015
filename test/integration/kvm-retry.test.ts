/**
 * The libvirt client sorts SSH failures: refused or dropped connections are transient and retried; a
 * host key mismatch or a refused key is permanent and fails at once. Real virsh, real sockets on
 * 127.0.0.1, and a real sshd (own config, own keys, a free loopback port) for the permanent cases.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import {
    classifyVirshFailure,
    KvmConnection,
    LibvirtError,
    libvirtError,
    virshRetryable,
    withLibvirt,
} from "../../components/kvm/libvirt";
import type { RetrySchedule } from "../../components/shared/retry";
import { closedPort } from "../fixtures/ports";
import { startLoopbackSshd, type LoopbackSshd } from "../helpers/sshd";
import { ensureTestPackages } from "../helpers/deps";

const retry: RetrySchedule = { tries: 3, firstDelayMs: 5, maxDelayMs: 20, maxTotalMs: 10_000 };
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-kvm-retry-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function keygen(name: string): { key: string; pub: string } {
    const file = path.join(dir, name);
    cp.execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", file]);
    return { key: fs.readFileSync(file, "utf8"), pub: fs.readFileSync(`${file}.pub`, "utf8").trim() };
}
ensureTestPackages(); // ssh-keygen, sshd, virsh
const client = keygen("client");
const other = keygen("other-host");

const conn = (port: number, knownHosts = `[127.0.0.1]:${port} ${other.pub}\n`): KvmConnection => ({
    host: "rack-1",
    user: "root",
    address: "127.0.0.1",
    port,
    knownHosts,
});

/** A listener that accepts and at once closes every connection (an sshd dying, a middlebox cutting), counting them. */
async function dropping(): Promise<{ port: number; accepted: () => number; close: () => Promise<void> }> {
    let n = 0;
    const s = net.createServer((c) => {
        n++;
        c.destroy();
    });
    await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
    return {
        port: (s.address() as net.AddressInfo).port,
        accepted: () => n,
        close: () => new Promise((r) => s.close(() => r())),
    };
}

describe("transient SSH failures are retried", () => {
    it("a refused port: retried, then a transient failure naming host:port and member", async () => {
        const port = await closedPort();
        await assert.rejects(
            withLibvirt(conn(port), client.key, (virsh) => virsh(["list"]), { retry, member: "web-0" }),
            (e: LibvirtError) => {
                assert.deepEqual([e.errorClass, e.stage, e.transient], ["transient", "tcp", true]);
                assert.ok(
                    e.message.startsWith(
                        `[transient] libvirt root@127.0.0.1:${port} (host rack-1, member web-0): \`virsh list\` failed (tcp): `,
                    ),
                    e.message,
                );
                assert.match(e.message, /Connection refused/);
                assert.match(e.message, /\(gave up after 3 tries in \d+\.\d s\)$/);
                return true;
            },
        );
    });

    it("a connection accepted then dropped: transient, retried (even for a command that writes: it never ran)", async () => {
        const srv = await dropping();
        try {
            await assert.rejects(
                withLibvirt(conn(srv.port), client.key, (virsh) => virsh(["start", "egress-x"]), { retry }),
                (e: LibvirtError) => {
                    assert.deepEqual([e.errorClass, e.stage, e.mayHaveRun], ["transient", "tcp", false]);
                    assert.match(
                        e.message,
                        new RegExp(
                            `^\\[transient\\] libvirt root@127\\.0\\.0\\.1:${srv.port} \\(host rack-1\\): \`virsh start\` failed \\(tcp\\): .*(Socket error|handshake failed)`,
                        ),
                    );
                    return true;
                },
            );
            assert.equal(srv.accepted(), 3, "one connection per try");
        } finally {
            await srv.close();
        }
    });
});

describe("permanent SSH failures fail at once", () => {
    let sshd: LoopbackSshd;
    let port: number;
    let hostKeyFile: string;
    const connections = () => (sshd.log().match(/Connection from 127\.0\.0\.1/g) ?? []).length;

    before(async () => {
        sshd = await startLoopbackSshd(dir, [keygen("authorized").pub]);
        ({ port, hostKeyFile } = sshd);
    });
    after(() => sshd?.stop());

    it("a host key that does not match known_hosts: permanent, one connection", async () => {
        const before = connections();
        await assert.rejects(
            withLibvirt(conn(port), client.key, (virsh) => virsh(["list"]), { retry, member: "web-1" }),
            (e: LibvirtError) => {
                assert.deepEqual([e.errorClass, e.stage, e.transient], ["permanent", "host-key", false]);
                assert.ok(
                    e.message.startsWith(
                        `[permanent] libvirt root@127.0.0.1:${port} (host rack-1, member web-1): \`virsh list\` failed (host-key): `,
                    ),
                    e.message,
                );
                assert.doesNotMatch(e.message, /gave up/);
                return true;
            },
        );
        await new Promise((r) => setTimeout(r, 100)); // sshd logs the connection asynchronously
        assert.equal(connections() - before, 1, sshd.log());
    });

    it("a key the host does not accept: permanent (ssh-auth), one connection", async () => {
        const hostPub = fs.readFileSync(`${hostKeyFile}.pub`, "utf8").trim();
        const before = connections();
        await assert.rejects(
            withLibvirt(conn(port, `[127.0.0.1]:${port} ${hostPub}\n`), client.key, (virsh) => virsh(["list"]), {
                retry,
            }),
            (e: LibvirtError) => {
                assert.deepEqual([e.errorClass, e.stage], ["permanent", "ssh-auth"]);
                assert.match(
                    e.message,
                    /^\[permanent\] libvirt root@127\.0\.0\.1:\d+ \(host rack-1\): `virsh list` failed \(ssh-auth\): .* add the public key to the user's authorized_keys/,
                );
                return true;
            },
        );
        await new Promise((r) => setTimeout(r, 100));
        assert.equal(connections() - before, 1, sshd.log());
    });
});

describe("what is retried", () => {
    const dropped = libvirtError("x: Cannot recv data", "libvirt", false, true, true);
    const notConnected = libvirtError("x: Connection refused", "tcp", false, true, false);

    it("a drop mid-command retries reads only; a failed connect retries anything; permanent never", () => {
        assert.equal(virshRetryable(["domstate", "d"], dropped), true);
        assert.equal(
            virshRetryable(
                ["echo @@egress-item-0@@ ; domblklist 'a' ; echo @@egress-item-1@@ ; vol-info 'b'"],
                dropped,
            ),
            true,
        );
        assert.equal(virshRetryable(["start", "d"], dropped), false);
        assert.equal(virshRetryable(["metadata", "d", "--uri", "u", "--set", "<x/>"], dropped), false);
        assert.equal(virshRetryable(["start", "d"], notConnected), true);
        assert.equal(virshRetryable(["list"], libvirtError("x: host key", "host-key", false, false, false)), false);
    });

    it("a pool busy with a transfer is transient, and its refresh (a read) is tried again", () => {
        const busy = classifyVirshFailure(
            "error: Failed to refresh pool egress-test\nerror: internal error: pool 'egress-test' has asynchronous jobs running.",
        );
        assert.deepEqual([busy.stage, busy.transient, busy.notFound], ["libvirt", true, false]);
        const e = libvirtError("pool busy", busy.stage, busy.notFound, busy.transient, true);
        assert.equal(virshRetryable(["pool-refresh egress-test"], e), true);
        assert.equal(virshRetryable(["vol-create-as egress-test v 1G"], e), false, "a write is never retried blind");
    });

    it("bad XML and missing images are permanent; the message carries the class", () => {
        const xml = classifyVirshFailure(
            "error: Failed to define domain from /tmp/d.xml\nerror: XML error: Invalid value for attribute 'type' in element 'interface'",
        );
        assert.deepEqual([xml.stage, xml.transient], ["libvirt", false]);
        assert.match(xml.hint, /refused the XML/);
        const missing = classifyVirshFailure(
            "error: failed to get vol 'base-debian.qcow2'\nerror: Storage volume not found: no storage vol with matching path 'base-debian.qcow2'",
        );
        assert.deepEqual([missing.notFound, missing.transient], [true, false]);
        assert.equal(libvirtError("bad", "libvirt", false, false).message, "[permanent] bad");
    });
});
