/**
 * Helpers for tests that boot a real guest in the libvirt sandbox: the cached guest image (built by
 * scripts/build-guest-image.sh), served on loopback; an origin server inside the sandbox's network
 * namespace; requests through a guest's proxy from inside that namespace (the only place guests are
 * reachable); and the guest agent (read a file, run a command) through local virsh.
 */
import * as cp from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as path from "node:path";
import { PACKAGE_ROOT } from "../../src/engine/env";

/** Builds the guest image, or finds it in the machine-wide cache. Never skipped: a failed build fails. */
export function guestImage(): { file: string; ms: number } {
    const t0 = Date.now();
    const r = cp.spawnSync("bash", [path.join(PACKAGE_ROOT, "scripts", "build-guest-image.sh")], {
        encoding: "utf8",
        timeout: 1_800_000,
    });
    if (r.status !== 0)
        throw new Error(
            `build-guest-image.sh failed (${r.status ?? r.signal}): ${r.stderr.trim().split("\n").slice(-10).join("\n")}`,
        );
    process.stderr.write(r.stderr);
    return { file: r.stdout.trim().split("\n").pop()!, ms: Date.now() - t0 };
}

/** Serves `file` on 127.0.0.1 (what BaseImage downloads) with its sha256. */
export async function serveFile(file: string): Promise<{ url: string; sha256: string; close(): Promise<void> }> {
    const hash = crypto.createHash("sha256");
    await new Promise<void>((res, rej) =>
        fs
            .createReadStream(file)
            .on("data", (c) => hash.update(c))
            .on("end", res)
            .on("error", rej),
    );
    const size = fs.statSync(file).size;
    const server = http.createServer((req, res) => {
        if (req.url !== "/guest.qcow2") return void res.writeHead(404).end();
        res.writeHead(200, { "content-type": "application/octet-stream", "content-length": size });
        fs.createReadStream(file).pipe(res);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as net.AddressInfo).port;
    return {
        url: `http://127.0.0.1:${port}/guest.qcow2`,
        sha256: hash.digest("hex"),
        close: () =>
            new Promise<void>((r) => {
                server.closeAllConnections();
                server.close(() => r());
            }),
    };
}

/**
 * An origin server inside `netns` on `address`, ports 18080 (plain HTTP) and 443 (squid's default config
 * allows CONNECT only to 443; the tunnel carries plain HTTP). Answers `origin <port> <path>`, except
 * `/ip`: `{"ip": <the caller's address>}`, the egress-IP echo a service's health probe reads.
 */
export async function startOrigin(netns: string, address: string): Promise<{ stop(): void }> {
    const script = `const http=require("http");let n=0;for(const p of [18080,443]){http.createServer((q,s)=>q.url==="/ip"?s.setHeader("content-type","application/json").end(JSON.stringify({ip:q.socket.remoteAddress})):s.end("origin "+p+" "+q.url)).listen(p,${JSON.stringify(address)},()=>{if(++n===2)console.log("ready")})}`;
    const child = cp.spawn("ip", ["netns", "exec", netns, process.execPath, "-e", script], {
        stdio: ["ignore", "pipe", "inherit"],
    });
    await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("origin server in the sandbox did not start")), 15_000);
        child.stdout.on("data", (d) => String(d).includes("ready") && (clearTimeout(timer), resolve()));
        child.on("exit", (c) => reject(new Error(`origin server exited with ${c}`)));
    });
    return { stop: () => void child.kill() };
}

/** A GET through `proxy` (host:port) from inside `netns` ("" = from the host); `tunnel` = through CONNECT. Body, or "" on failure. */
export function viaProxy(netns: string, proxy: string, url: string, tunnel = false, timeoutS = 5): string {
    const r = cp.spawnSync(
        netns ? "ip" : "curl",
        [
            ...(netns ? ["netns", "exec", netns, "curl"] : []),
            "-s",
            "-m",
            String(timeoutS),
            ...(tunnel ? ["-p"] : []),
            "-x",
            `http://${proxy}`,
            url,
        ],
        { encoding: "utf8", timeout: (timeoutS + 5) * 1000 },
    );
    return r.status === 0 ? r.stdout : "";
}

function agent(domain: string, cmd: object): any {
    const r = cp.spawnSync(
        "virsh",
        ["-q", "-c", "qemu:///system", "qemu-agent-command", domain, JSON.stringify(cmd), "--timeout", "10"],
        { encoding: "utf8", timeout: 30_000 },
    );
    if (r.status !== 0) throw new Error(`guest agent of ${domain}: ${r.stderr.trim()}`);
    return JSON.parse(r.stdout).return;
}

/** A file of the guest, byte for byte, read through the guest agent. */
export function guestReadFile(domain: string, file: string): Buffer {
    const h = agent(domain, { execute: "guest-file-open", arguments: { path: file, mode: "r" } });
    const parts: Buffer[] = [];
    try {
        for (;;) {
            const r = agent(domain, { execute: "guest-file-read", arguments: { handle: h, count: 1 << 20 } });
            parts.push(Buffer.from(r["buf-b64"], "base64"));
            if (r.eof || r.count === 0) break;
        }
    } finally {
        agent(domain, { execute: "guest-file-close", arguments: { handle: h } });
    }
    return Buffer.concat(parts);
}

/** Runs argv in the guest through the agent; resolves exit code and output. */
export async function guestExec(domain: string, argv: string[]): Promise<{ code: number; out: string }> {
    const pid = agent(domain, {
        execute: "guest-exec",
        arguments: { path: argv[0], arg: argv.slice(1), "capture-output": true },
    }).pid;
    for (let i = 0; i < 120; i++) {
        const s = agent(domain, { execute: "guest-exec-status", arguments: { pid } });
        if (s.exited)
            return {
                code: s.exitcode,
                out:
                    Buffer.from(s["out-data"] ?? "", "base64").toString() +
                    Buffer.from(s["err-data"] ?? "", "base64").toString(),
            };
        await new Promise((r) => setTimeout(r, 500));
    }
    throw new Error(`${argv.join(" ")} did not finish in the guest`);
}
