/**
 * A KVM delete whose host cannot be reached fails naming the way out (`egress forget <member>`,
 * `retainOnDelete`). The volume providers' real delete runs the real virsh against a loopback port
 * nothing listens on; other failures keep their message.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { closedPort } from "../fixtures/ports";
import { overlayProvider } from "../../components/kvm/overlay";
import { seedDiskProvider } from "../../components/kvm/seed-disk";
import { libvirtError } from "../../components/kvm/libvirt";
import { memberObjectNames, overlayVolumeName, seedVolumeName } from "../../components/kvm/naming";
import { explainUnreachableDelete, memberOfVolumeName } from "../../components/kvm/unreachable";
import { TEST_INSTALLATION } from "../helpers/installation";

test(
    "overlay and seed deletes on an unreachable host name `egress forget <member>` and retainOnDelete",
    { timeout: 60_000 },
    async (t) => {
        // Providers take their retry schedule from the environment (the engine runs them): keep it short.
        process.env.EGRESS_RETRY_SCHEDULE = "3,5,20,5000";
        t.after(() => delete process.env.EGRESS_RETRY_SCHEDULE);
        const port = await closedPort();
        const conn = {
            host: "gone",
            user: "root",
            address: "127.0.0.1",
            port,
            knownHosts: `[127.0.0.1]:${port} ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n`,
        };
        const privateKey =
            "-----BEGIN OPENSSH PRIVATE KEY-----\nunused: the TCP connect fails first\n-----END OPENSSH PRIVATE KEY-----\n";
        const domain = memberObjectNames(TEST_INSTALLATION.id, "home-3").domain;
        const cases: [string, () => Promise<void>][] = [
            [
                overlayVolumeName(domain, "base-kvm-home-debian-13.qcow2"),
                () =>
                    overlayProvider.delete!("id", {
                        conn,
                        privateKey,
                        storagePool: "default",
                        volume: overlayVolumeName(domain, "base-kvm-home-debian-13.qcow2"),
                        path: "/x",
                    } as any),
            ],
            [
                seedVolumeName(domain, "0a1b2c3d"),
                () =>
                    seedDiskProvider.delete!("id", {
                        conn,
                        privateKey,
                        storagePool: "default",
                        volume: seedVolumeName(domain, "0a1b2c3d"),
                        path: "/x",
                    } as any),
            ],
        ];
        for (const [volume, del] of cases) {
            await assert.rejects(del(), (e: Error & { stage?: string }) => {
                assert.equal(e.stage, "tcp", e.message);
                assert.match(e.message, /Connection refused/, "the cause is kept");
                assert.match(
                    e.message,
                    /^\[transient\] libvirt root@127\.0\.0\.1:\d+ \(host gone, member home-3\): .*\(gave up after 3 tries in /,
                    "retried under the injected schedule",
                );
                assert.ok(e.message.includes(`cannot delete volume ${volume}: its host is not reachable`), e.message);
                assert.match(e.message, /`egress forget home-3` removes the member from state/);
                assert.match(e.message, /`retainOnDelete: true` on the provider entry/);
                return true;
            });
        }
    },
);

test("only failures to reach the host get the hint; member names come back out of volume names", () => {
    const refused = explainUnreachableDelete(
        libvirtError("x: Connection refused", "tcp", false, true),
        "domain d",
        "web-1",
    ) as Error;
    assert.match(refused.message, /egress forget web-1/);
    const badKey = explainUnreachableDelete(
        libvirtError("x: host key mismatch", "host-key", false, false),
        "domain d",
        undefined,
    ) as Error;
    assert.match(badKey.message, /egress forget <member>/);
    const busy = libvirtError("x: volume in use", "libvirt", false, false);
    assert.equal(
        (explainUnreachableDelete(busy, "volume v", "web-1") as Error).message,
        "[permanent] x: volume in use",
    );
    const domain = memberObjectNames(TEST_INSTALLATION.id, "pool-a-12").domain;
    assert.equal(memberOfVolumeName(overlayVolumeName(domain, "base-x-y.qcow2")), "pool-a-12");
    assert.equal(memberOfVolumeName(seedVolumeName(domain, "deadbeef")), "pool-a-12");
    assert.equal(memberOfVolumeName("base-kvm-home-debian-13.qcow2"), undefined);
});
