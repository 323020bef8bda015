/**
 * Base image downloads (kinds/kvm/fetch.ts) against a real HTTP server on 127.0.0.1: a flaky
 * server is retried, a missing image fails at once as permanent.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { downloadTo } from "../../kinds/kvm/fetch";
import { closedPort } from "../fixtures/ports";

const IMAGE = crypto.randomBytes(256 * 1024);
const retry = { tries: 4, firstDelayMs: 5, maxDelayMs: 20, maxTotalMs: 5000 };
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-fetch-"));
let server: http.Server;
let base: string;
let statuses: number[] = [];
let calls = 0;

before(async () => {
    server = http.createServer((_req, res) => {
        calls++;
        const status = statuses.shift() ?? 200;
        res.writeHead(status);
        res.end(status === 200 ? IMAGE : "no");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
    server.close();
    fs.rmSync(dir, { recursive: true, force: true });
});

test("429 then 503 are retried; the third answer's bytes arrive whole", async () => {
    statuses = [429, 503];
    calls = 0;
    const got = await downloadTo(`${base}/debian.qcow2`, path.join(dir, "a"), 10_000, retry);
    assert.equal(calls, 3);
    assert.equal(got.sha256, crypto.createHash("sha256").update(IMAGE).digest("hex"));
    assert.ok(fs.readFileSync(path.join(dir, "a")).equals(IMAGE));
});

test("a missing image (404) fails at once as permanent; a refused server is transient after the schedule", async () => {
    statuses = [404];
    calls = 0;
    await assert.rejects(downloadTo(`${base}/gone.qcow2`, path.join(dir, "b"), 10_000, retry), { errorClass: "permanent", message: `[permanent] image url ${base}/gone.qcow2: HTTP 404 (no image there)` });
    assert.equal(calls, 1);
    await assert.rejects(downloadTo(`file://${dir}/nothing.qcow2`, path.join(dir, "c"), 10_000, retry), { errorClass: "permanent", message: /^\[permanent\] image url file:.*does not exist$/ });
    const port = await closedPort();
    await assert.rejects(downloadTo(`http://127.0.0.1:${port}/x.qcow2`, path.join(dir, "d"), 10_000, retry), { errorClass: "transient", message: /^\[transient\] image url http:\/\/127\.0\.0\.1:\d+\/x\.qcow2: connect ECONNREFUSED .*\(gave up after 4 tries in / });
});
