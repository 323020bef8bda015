/**
 * `--provider-check-timeout` on KVM, against the real sandbox: a host that accepts TCP and then says
 * nothing (as a hung or SIGSTOPped sshd does) gets a `timeout` verdict at the deadline, its virsh is
 * killed, and neither the other host of the entry nor another provider waits for it.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import pino from "pino";
import { kvmChecker } from "../../components/kvm/health";
import { checkerFor } from "../../components/registry";
import type { CheckVerdict } from "../../components/kind";
import { ProviderHealth } from "../../src/service/observe/provider-checks";
import { createMetrics } from "../../src/service/observe/metrics";
import { kvmEntry, Sandbox, startSandbox, teardown } from "./sandbox";

let sb: Sandbox;
const img = { url: "http://127.0.0.1:9/unused.qcow2", sha256: "0".repeat(64) };
const work = fs.mkdtempSync(path.join(os.tmpdir(), "egress-kvm-deadline-"));

/** Accepts connections and never writes a byte: to an SSH client, a host gone silent after the TCP handshake. */
async function silentListener(): Promise<{ port: number; open(): number; close(): Promise<void> }> {
    const sockets = new Set<net.Socket>();
    const server = net.createServer((s) => {
        sockets.add(s);
        s.on("close", () => sockets.delete(s));
        s.on("error", () => undefined);
        s.resume(); // read and drop what the client sends, so its close is seen
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return {
        port: (server.address() as net.AddressInfo).port,
        open: () => sockets.size,
        close: () =>
            new Promise<void>((r) => {
                sockets.forEach((s) => s.destroy());
                server.close(() => r());
            }),
    };
}

let silent: Awaited<ReturnType<typeof silentListener>>;
before(async () => {
    sb = startSandbox();
    silent = await silentListener();
});
after(async () => {
    await silent?.close();
    await teardown({ work });
});

/** The sandbox plus a second host on the silent listener. */
function twoHosts() {
    const e = kvmEntry(sb, img);
    return { ...e, hosts: [e.hosts[0], { ...e.hosts[0], name: "silent", port: silent.port }] };
}

test(
    "a silent host gets a timeout verdict at the check timeout, its virsh is killed, and the good host is not held back",
    { timeout: 60_000 },
    async () => {
        const t0 = Date.now();
        const arrived = new Map<string, number>();
        const verdicts = await kvmChecker("lab", twoHosts(), { timeoutMs: 4000 }).check(undefined, (v) =>
            arrived.set(v.target, Date.now() - t0),
        );
        const [good, quiet] = verdicts;
        assert.equal(good.ok, true, good.message);
        assert.deepEqual([quiet.target, quiet.ok, quiet.stage], ["silent", false, "timeout"]);
        assert.match(
            quiet.message,
            /^silent \(127\.0\.0\.1:\d+\) stalled at stage libvirt \(virsh version\): no verdict within the 4000 ms check timeout; is sshd or libvirtd on the host hung\?$/,
        );
        assert.ok(
            arrived.get("sandbox")! < arrived.get("silent")!,
            `the good host's verdict came first (${JSON.stringify([...arrived])})`,
        );
        // Before: each virsh call had its own 10 s and was retried, so the verdict came after ~33 s.
        assert.ok(
            arrived.get("silent")! >= 3900 && arrived.get("silent")! < 15_000,
            `the silent host's verdict at about the 4 s deadline, well before 33 s (got ${arrived.get("silent")} ms)`,
        );
        // The killed virsh closes its connection; nothing keeps talking to the silent host after the verdict.
        const deadline = Date.now() + 5000;
        while (silent.open() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        assert.equal(silent.open(), 0, "virsh's connection to the silent host was closed after the deadline");
    },
);

test("the caller's signal ends the check early, with its reason in the verdict", { timeout: 30_000 }, async () => {
    const e = twoHosts();
    const stop = new AbortController();
    setTimeout(() => stop.abort(new Error("stopped by the test")), 1500);
    const t0 = Date.now();
    const [v] = await kvmChecker("lab", { ...e, hosts: [e.hosts[1]] }, { timeoutMs: 20_000 }).check(stop.signal);
    assert.deepEqual([v.ok, v.stage], [false, "timeout"]);
    assert.match(v.message, /stalled at stage libvirt \(virsh version\): stopped by the test;/);
    assert.ok(Date.now() - t0 < 10_000, `ended at the signal, well before the 20 s timeout (${Date.now() - t0} ms)`);
});

test(
    "egress serve's provider health: --provider-check-timeout reaches the KVM checker; the other host and another provider report at once",
    { timeout: 60_000 },
    async () => {
        const answering = net.createServer((s) => s.end());
        await new Promise<void>((r) => answering.listen(0, "127.0.0.1", r));
        const staticPort = (answering.address() as net.AddressInfo).port;
        try {
            const ph = new ProviderHealth({
                log: pino({ level: "silent" }),
                metrics: createMetrics(),
                intervalMs: 60_000,
                timeoutMs: 5000,
            });
            const opts = { timeoutMs: ph.timeoutMs };
            ph.setCheckers([
                checkerFor("lab", twoHosts(), work, "dev", opts),
                checkerFor(
                    "fixed",
                    { type: "static", proxies: [`http://127.0.0.1:${staticPort}`] } as never,
                    work,
                    "dev",
                    opts,
                ),
            ]);
            const t0 = Date.now();
            const seen = new Map<string, { at: number; v: CheckVerdict }>();
            const round = ph.runOnce();
            let done = false;
            void round.then(() => (done = true));
            while (!done) {
                for (const r of ph.snapshot())
                    for (const t of r.targets)
                        if (!seen.has(`${r.provider}/${t.target}`))
                            seen.set(`${r.provider}/${t.target}`, { at: Date.now() - t0, v: t });
                await new Promise((r) => setTimeout(r, 20));
            }
            await round;
            for (const r of ph.snapshot())
                for (const t of r.targets)
                    if (!seen.has(`${r.provider}/${t.target}`))
                        seen.set(`${r.provider}/${t.target}`, { at: Date.now() - t0, v: t });
            const at = (k: string) => seen.get(k)?.at ?? NaN;
            assert.equal(seen.get("fixed/127.0.0.1:" + staticPort)?.v.ok, true);
            assert.equal(seen.get("lab/sandbox")?.v.ok, true, seen.get("lab/sandbox")?.v.message);
            assert.equal(seen.get("lab/silent")?.v.stage, "timeout");
            assert.ok(
                at("lab/sandbox") < 4000 && at(`fixed/127.0.0.1:${staticPort}`) < 4000,
                `the others were published before the 5 s deadline (${JSON.stringify([...seen].map(([k, s]) => [k, s.at]))})`,
            );
            assert.ok(
                at("lab/silent") >= 4900 && at("lab/silent") < 15_000,
                `the silent host at about the 5 s --provider-check-timeout (got ${at("lab/silent")} ms)`,
            );
            const [lab] = ph.snapshot();
            assert.equal(lab.ok, false, "the entry is down while one of its hosts is");
        } finally {
            answering.close();
        }
    },
);
