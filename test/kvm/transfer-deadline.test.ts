/**
 * Transfer deadlines on the real sandbox: a host that vanishes mid-`vol-upload` (its link cut: a loopback
 * relay in front of the sandbox's sshd stops forwarding that connection, without a FIN or RST, as a
 * pulled cable does) fails the BaseImage create at the upload's total deadline with a transient error
 * naming it, instead of after the former 60 minutes.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import type * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { baseImageProvider } from "../../components/kvm/base-image";
import { connection, lv, Sandbox, startSandbox, teardown } from "./sandbox";
import { Relay, sshRelay } from "./relay";

let sb: Sandbox;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "egress-kvm-transfer-"));
const IMAGE = crypto.randomBytes(4 * 1024 * 1024);
const VOLUME = "base-xfer-cut.raw";

let image: http.Server;
let imageUrl: string;
let link: Relay;
before(async () => {
    sb = startSandbox();
    image = http.createServer((_req, res) => res.writeHead(200, { "content-length": String(IMAGE.length) }).end(IMAGE));
    await new Promise<void>((r) => image.listen(0, "127.0.0.1", r));
    imageUrl = `http://127.0.0.1:${(image.address() as net.AddressInfo).port}/cut.raw`;
    link = await sshRelay(sb, { cutAfter: 1024 * 1024 });
});
after(async () => {
    link?.close();
    image?.close();
    await teardown({ work });
});

test(
    "a host whose link is cut mid-upload: the create fails at the upload's total deadline, transient, naming it",
    { timeout: 120_000 },
    async () => {
        const conn = connection(sb, { port: link.port, knownHosts: link.knownHosts });
        const t0 = Date.now();
        // 4 MiB at 512 KiB/s + 2 s grace: a 10 s deadline for the upload.
        const e = await baseImageProvider.create!({
            conn,
            privateKey: sb.privateKey,
            storagePool: sb.pool,
            entry: "xfer",
            key: "cut",
            url: imageUrl,
            sha256: crypto.createHash("sha256").update(IMAGE).digest("hex"),
            format: "raw",
            volume: VOLUME,
            transfer: { minKiBPerSecond: 512, graceSeconds: 2, idleSeconds: 30 },
        }).then(
            () => assert.fail("the create should have failed"),
            (x) => x,
        );
        const ms = Date.now() - t0;
        assert.equal(link.cuts(), 1, "exactly the upload's connection was cut");
        assert.equal(e.errorClass, "transient");
        assert.match(
            e.message,
            /^\[transient\] image `cut` of provider `xfer` on root@127\.0\.0\.1:\d+ \(host sandbox\): `virsh vol-upload` of base-xfer-cut\.raw: missed its total deadline of 10 s: 4\.0 MiB at the minimum 512 KiB\/s plus 2 s grace after 1\d\.\d s; the next up tries again \(a slower source needs `egress:providers\.xfer\.images\.cut\.transfer\.minKiBPerSecond`\/`graceSeconds`\)$/,
        );
        assert.ok(ms < 40_000, `failed at about the 10 s deadline, not after the former 60 minutes (${ms} ms)`);
        // The create cleaned up through a fresh connection (the host was back): nothing half-written is left.
        assert.ok(!lv(["vol-list", "--pool", sb.pool]).includes(VOLUME), "the half-written volume was removed");
    },
);
