/**
 * Time from a KVM host going silent to the provider verdicts, through the service's ProviderHealth.
 * Run (holds the libvirt sandbox): flock /tmp/egress-kvm-tests.lock node dist/bench/provider-check-deadline.js [--timeout-ms 5000]
 *
 * One `type: kvm` entry with three hosts: the real sandbox, a loopback listener that accepts and never
 * writes, and a real loopback sshd stopped with SIGSTOP after it started; plus a `type: static` provider
 * whose proxy answers. One round with `--provider-check-timeout` = timeout-ms; the table says when each
 * target's verdict was first published (the snapshot is polled every 20 ms) and what it said.
 */
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import pino from "pino";
import { benchTable } from "./table";
import { checkerFor } from "../components/registry";
import { ProviderHealth } from "../src/service/observe/provider-checks";
import { createMetrics } from "../src/service/observe/metrics";
import { kvmEntry, startSandbox, stopSandbox } from "../test/kvm/sandbox";
import { startLoopbackSshd } from "../test/helpers/sshd";

const arg = (name: string, dflt: number) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? Number(process.argv[i + 1]) : dflt;
};

async function listen(onConnection: (s: net.Socket) => void): Promise<net.Server> {
    const server = net.createServer(onConnection);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return server;
}
const portOf = (s: net.Server) => (s.address() as net.AddressInfo).port;

async function main(): Promise<void> {
    const timeoutMs = arg("timeout-ms", 5000);
    const work = fs.mkdtempSync(path.join(os.tmpdir(), "egress-bench-deadline-"));
    const sb = startSandbox();
    const held: net.Socket[] = [];
    const silent = await listen((s) => (held.push(s), s.on("error", () => undefined)));
    const answering = await listen((s) => s.end());
    const sshd = await startLoopbackSshd(work, []);
    const sshdPid = sshd.pid;
    process.kill(sshdPid, "SIGSTOP");
    try {
        const e = kvmEntry(sb, { url: "http://127.0.0.1:9/unused.qcow2", sha256: "0".repeat(64) });
        const hosts = [
            e.hosts[0],
            { ...e.hosts[0], name: "silent-listener", port: portOf(silent) },
            { ...e.hosts[0], name: "sigstopped-sshd", port: sshd.port },
        ];
        const ph = new ProviderHealth({
            log: pino({ level: "silent" }),
            metrics: createMetrics(),
            intervalMs: 60_000,
            timeoutMs,
        });
        const opts = { timeoutMs };
        ph.setCheckers([
            checkerFor("lab", { ...e, hosts }, work, "bench", opts),
            checkerFor(
                "fixed",
                { type: "static", proxies: [`http://127.0.0.1:${portOf(answering)}`] } as never,
                work,
                "bench",
                opts,
            ),
        ]);
        const seen = new Map<string, { ms: number; ok: boolean; stage?: string; message: string }>();
        const look = (t0: number) => {
            for (const r of ph.snapshot())
                for (const t of r.targets)
                    if (!seen.has(`${r.provider}/${t.target}`))
                        seen.set(`${r.provider}/${t.target}`, {
                            ms: Date.now() - t0,
                            ok: t.ok,
                            stage: t.stage,
                            message: t.message,
                        });
        };
        const t0 = Date.now();
        let done = false;
        const round = ph.runOnce().then(() => (done = true));
        while (!done) {
            look(t0);
            await new Promise((r) => setTimeout(r, 20));
        }
        await round;
        look(t0);
        const roundMs = Date.now() - t0;
        console.log(`provider check timeout ${timeoutMs} ms; round took ${roundMs} ms`);
        console.log(
            benchTable(
                ["target", "verdict after ms", "ok", "stage", "message"],
                [...seen].map(([k, v]) => [k, String(v.ms), String(v.ok), v.stage ?? "", v.message.slice(0, 110)]),
            ),
        );
    } finally {
        process.kill(sshdPid, "SIGCONT");
        sshd.stop();
        held.forEach((s) => s.destroy());
        silent.close();
        answering.close();
        fs.rmSync(work, { recursive: true, force: true });
        stopSandbox();
    }
}

main().then(
    () => process.exit(0),
    (e) => {
        console.error(e);
        process.exit(1);
    },
);
