/**
 * Base image downloads (components/kvm/fetch.ts) against a real HTTP server on 127.0.0.1: a flaky
 * server is retried, a missing image fails at once as permanent; a mirror that drips or stalls misses
 * one of its transfer deadlines (components/kvm/transfer.ts), as a transient error naming it.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { downloadTo } from "../../components/kvm/fetch";
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
    const got = await downloadTo(`${base}/debian.qcow2`, path.join(dir, "a"), { retry });
    assert.equal(calls, 3);
    assert.equal(got.sha256, crypto.createHash("sha256").update(IMAGE).digest("hex"));
    assert.ok(fs.readFileSync(path.join(dir, "a")).equals(IMAGE));
});

test("a missing image (404) fails at once as permanent; a refused server is transient after the schedule", async () => {
    statuses = [404];
    calls = 0;
    await assert.rejects(downloadTo(`${base}/gone.qcow2`, path.join(dir, "b"), { retry }), {
        errorClass: "permanent",
        message: `[permanent] image url ${base}/gone.qcow2: HTTP 404 (no image there)`,
    });
    assert.equal(calls, 1);
    await assert.rejects(downloadTo(`file://${dir}/nothing.qcow2`, path.join(dir, "c"), { retry }), {
        errorClass: "permanent",
        message: /^\[permanent\] image url file:.*does not exist$/,
    });
    const port = await closedPort();
    await assert.rejects(downloadTo(`http://127.0.0.1:${port}/x.qcow2`, path.join(dir, "d"), { retry }), {
        errorClass: "transient",
        message:
            /^\[transient\] image url http:\/\/127\.0\.0\.1:\d+\/x\.qcow2: connect ECONNREFUSED .*\(gave up after 4 tries in /,
    });
});

/**
 * A second loopback server whose answers the tests shape: `drip` bytes every 100 ms (with or without
 * Content-Length), or half the body and then silence. Sockets are kept so `after` can end them.
 */
const shaped = new Set<import("node:net").Socket>();
let shapedServer: http.Server;
let shapedBase: string;
before(async () => {
    shapedServer = http.createServer((req, res) => {
        const total = IMAGE.length;
        const withLength = !req.url!.includes("chunked");
        res.writeHead(200, withLength ? { "content-length": String(total) } : {});
        if (req.url!.startsWith("/stall")) return void res.write(IMAGE.subarray(0, total / 2)); // then nothing, socket open
        let sent = 0;
        const t = setInterval(() => {
            if (res.destroyed || sent >= total) return clearInterval(t);
            res.write(IMAGE.subarray(sent, sent + 1024));
            sent += 1024;
        }, 100);
        res.on("close", () => clearInterval(t));
    });
    shapedServer.on("connection", (s) => (shaped.add(s), s.on("close", () => shaped.delete(s))));
    await new Promise<void>((r) => shapedServer.listen(0, "127.0.0.1", r));
    shapedBase = `http://127.0.0.1:${(shapedServer.address() as AddressInfo).port}`;
});
after(() => {
    shaped.forEach((s) => s.destroy());
    shapedServer.close();
});

const where = "egress:providers.lab.images.tiny.transfer";
/** 256 KiB at 64 KiB/s + 1 s grace: a 5 s total deadline; the drip sends 10 KiB/s and would take 25 s. */
const limits = { minKiBPerSecond: 64, graceSeconds: 1, idleSeconds: 2 };

async function failsWith(url: string, file: string): Promise<{ e: Error & { errorClass?: string }; ms: number }> {
    const t0 = Date.now();
    const e = await downloadTo(url, path.join(dir, file), { retry, limits, where }).then(
        () => assert.fail("the download should have failed"),
        (x) => x,
    );
    return { e, ms: Date.now() - t0 };
}

test(
    "a mirror that drips (Content-Length known) misses the total deadline, as a transient error naming it",
    { timeout: 30_000 },
    async () => {
        const { e, ms } = await failsWith(`${shapedBase}/drip.qcow2`, "drip");
        assert.equal(e.errorClass, "transient");
        assert.match(
            e.message,
            new RegExp(
                `^\\[transient\\] image url ${shapedBase}/drip\\.qcow2: the download: missed its total deadline of 5 s: 0\\.3 MiB at the minimum 64 KiB/s plus 1 s grace, 0\\.\\d MiB of 0\\.3 MiB moved in 5\\.\\d s; the next up tries again \\(a slower source needs \`${where.replace(/\./g, "\\.")}\\.minKiBPerSecond\`/\`graceSeconds\`\\)$`,
            ),
        );
        assert.ok(
            ms >= 4900 && ms < 12_000,
            `failed at about the 5 s deadline, well before the 25 s the drip needs (${ms} ms)`,
        );
    },
);

test("a mirror that drips without Content-Length misses the minimum-rate deadline", { timeout: 30_000 }, async () => {
    const { e, ms } = await failsWith(`${shapedBase}/drip-chunked.qcow2`, "chunked");
    assert.equal(e.errorClass, "transient");
    assert.match(
        e.message,
        /: the download: missed its minimum-rate deadline: below 64 KiB\/s on average after 1 s grace, 0\.\d MiB moved in \d\.\d s; .*minKiBPerSecond/,
    );
    assert.ok(ms < 12_000, `well before the 25 s the drip needs (${ms} ms)`);
});

test("a mirror that stalls mid-body misses the idle deadline", { timeout: 30_000 }, async () => {
    const { e, ms } = await failsWith(`${shapedBase}/stall.qcow2`, "stall");
    assert.equal(e.errorClass, "transient");
    assert.match(
        e.message,
        /^\[transient\] image url .*\/stall\.qcow2.*: missed its idle deadline: no byte for 2 s.*; the next up tries again \(a slower source needs `egress:providers\.lab\.images\.tiny\.transfer\.idleSeconds`\)$/,
    );
    assert.ok(ms >= 1900 && ms < 5000, `at about the 2 s idle deadline, before the 5 s total one (${ms} ms)`);
    // Nothing keeps the stalled connection open.
    const t0 = Date.now();
    while (shaped.size > 0 && Date.now() - t0 < 3000) await new Promise((r) => setTimeout(r, 20));
    assert.equal(shaped.size, 0, "the stalled connection was closed");
});
