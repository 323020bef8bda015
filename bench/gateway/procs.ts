/** Starting the processes of bench/gateway.ts from the load's side: forked roles, gateways, members. */
import { ChildProcess, fork, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import type { BenchGateway, StoreSpec } from "../gateway-replicas";

/** bench/gateway.ts compiled: the forked roles run it with the role as its first argument. */
const ENTRY = path.join(__dirname, "..", "gateway.js");

export function forkRole(
    role: "origin" | "gateway" | "relay",
): Promise<{ child: ChildProcess; port: number; send(m: unknown): void }> {
    const child = fork(ENTRY, [role], {
        stdio: ["ignore", "inherit", "inherit", "ipc"],
        execArgv:
            role === "gateway" && process.env.BENCH_GATEWAY_PROF
                ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_GATEWAY_PROF}`]
                : [],
    });
    return new Promise((resolve, reject) => {
        child.once("error", reject);
        child.once("exit", (code) => reject(new Error(`${role} exited with ${code}`)));
        const ready = { child, port: 0, send: (m: unknown) => child.send(m as never) };
        child.once("message", (m: { port: number }) => resolve({ ...ready, port: m.port }));
        if (role === "origin") return;
        resolve(ready); // the gateway answers after its IPC message: the caller waits for it
    });
}

/** Forks a gateway over `urls` (with `store`: leases in Redis) and waits for its ports; `stop` ends it normally. */
export async function startGateway(
    children: ChildProcess[],
    token: string,
    urls: string[],
    store?: StoreSpec,
): Promise<BenchGateway & { pid: number }> {
    const gw = await forkRole("gateway");
    children.push(gw.child);
    const ports = await new Promise<{ port: number; readyPort: number }>((resolve, reject) => {
        gw.child.once("message", resolve);
        gw.child.once("exit", (code) => reject(new Error(`a gateway exited with ${code} before listening`)));
        gw.send({ token, urls, store });
    });
    const stop = () =>
        new Promise<void>((r) => {
            if (gw.child.exitCode !== null || gw.child.signalCode !== null) return r();
            gw.child.once("exit", () => r());
            gw.child.kill("SIGINT");
        });
    return { ...ports, pid: gw.child.pid!, stop };
}

/** One local-kind member process (components/local/proxy-server.js), as the provider starts it. */
export async function startMember(dir: string, i: number): Promise<{ child: ChildProcess; url: string }> {
    const ready = path.join(dir, `m${i}.ready`);
    const script = path.join(__dirname, "..", "..", "components", "local", "proxy-server.js");
    const child = spawn(process.execPath, [script, "--id", `bench-${i}`, "--port", "0", "--ready", ready], {
        stdio: ["ignore", "ignore", "inherit"],
    });
    for (let t = 0; t < 200 && !fs.existsSync(ready); t++) await new Promise((r) => setTimeout(r, 50));
    if (!fs.existsSync(ready)) throw new Error(`member ${i} did not start`);
    return { child, url: `http://127.0.0.1:${JSON.parse(fs.readFileSync(ready, "utf8")).port}` };
}

/** Forks the bare relay (roles.ts) over `urls`; `stop` ends it. */
export async function startRelay(
    children: ChildProcess[],
    urls: string[],
): Promise<{ port: number; pid: number; stop(): void }> {
    const r = await forkRole("relay");
    children.push(r.child);
    const { port } = await new Promise<{ port: number }>((resolve) => {
        r.child.once("message", resolve);
        r.send({ urls });
    });
    return { port, pid: r.child.pid!, stop: () => void r.child.kill("SIGINT") };
}
