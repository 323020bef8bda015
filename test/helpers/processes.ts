/**
 * egress as separate processes, for tests that kill them: a throwaway project with its own EGRESS_HOME
 * (the real CLI linked in), `egress serve` and CLI commands as children, and /proc views of what runs.
 */
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import YAML from "yaml";
import { engineHome, PACKAGE_ROOT } from "../../src/engine";
import { MARKER_VAR } from "../../src/engine/leftovers";
import { OFFLINE_ENV } from "./project";
import { runningProxies } from "../../kinds/local/process";

export const ADMIN_TOKEN = "tok-crash-admin-0123456789abcdef";
const CLI = path.join(PACKAGE_ROOT, "dist", "src", "cli.js");

export interface ProcProject {
    dir: string;
    stack: string;
    home: string;
    /** Where the stack's local proxies keep their ready files. */
    stateDir: string;
    backendDir: string;
    env: Record<string, string>;
    setReplicas(pool: string, n: number): void;
    cleanup(): void;
}

/** A project whose every egress process (service, CLI, engine) is isolated from the developer's. */
export function procProject(stack: string, config: object, extraEnv: Record<string, string> = {}): ProcProject {
    const bin = engineHome().binDir;
    for (const b of ["pulumi", "egress-supervise"]) if (!fs.existsSync(path.join(bin, b))) throw new Error(`${bin}/${b} is missing: run \`npm run setup\``);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-proc-"));
    const home = path.join(dir, ".egress");
    fs.mkdirSync(home);
    fs.symlinkSync(bin, path.join(home, "bin"));
    const settings = YAML.parse(fs.readFileSync(path.join(PACKAGE_ROOT, "Pulumi.yaml"), "utf8"));
    delete settings.main;
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), YAML.stringify(settings));
    fs.mkdirSync(path.join(dir, "stacks"));
    const file = path.join(dir, "stacks", `Pulumi.${stack}.yaml`);
    fs.writeFileSync(file, YAML.stringify({ config }));
    const backendDir = path.join(dir, "backend");
    fs.mkdirSync(backendDir);
    const env = {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: process.env.HOME ?? dir,
        EGRESS_HOME: home,
        PULUMI_BACKEND_URL: `file://${backendDir}`,
        PULUMI_CONFIG_PASSPHRASE: "egress-test-passphrase",
        EGRESS_TOKENS: `admin:admin:${ADMIN_TOKEN}`,
        ...OFFLINE_ENV,
        ...extraEnv,
    };
    return {
        dir, stack, home, backendDir, env,
        stateDir: path.join(home, "run", "local", stack),
        setReplicas(pool, n) {
            const doc = YAML.parse(fs.readFileSync(file, "utf8"));
            doc.config["egress:pools"].find((p: { name: string }) => p.name === pool).replicas = n;
            fs.writeFileSync(file, YAML.stringify(doc));
        },
        cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
    };
}

/** Runs `egress <args>` to completion. */
export function cli(p: ProcProject, args: string[], timeoutMs = 120_000): { code: number; stdout: string; stderr: string } {
    const r = cp.spawnSync(process.execPath, [CLI, ...args, "--stack", p.stack, "--cwd", p.dir], { env: p.env, encoding: "utf8", timeout: timeoutMs });
    return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** Starts `egress <args>` without waiting. */
export function spawnCli(p: ProcProject, args: string[]): cp.ChildProcessWithoutNullStreams {
    return cp.spawn(process.execPath, [CLI, ...args, "--stack", p.stack, "--cwd", p.dir], { env: p.env });
}

export interface ServeProcess {
    child: cp.ChildProcessWithoutNullStreams;
    url: string;
    logs: string[];
    call(method: string, route: string, body?: unknown): Promise<{ status: number; body: any }>;
    /** Resolves when the process has exited. */
    exited: Promise<number | null>;
}

const running = new Set<cp.ChildProcess>();

/** SIGKILLs every `egress serve` a test started that still runs (for `after` hooks: a failed assertion must not leave one). */
export function killServices(): void {
    for (const c of running) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
}

/** Starts `egress serve --port 0` and resolves once it logged "egress service ready". */
export async function serve(p: ProcProject, extraArgs: string[] = []): Promise<ServeProcess> {
    // No self-healing unless a test asks for it: these tests kill things on purpose and check what follows.
    const child = spawnCli(p, ["serve", "--port", "0", "--probe-interval", "1", "--reconcile-interval", "0", ...extraArgs]);
    running.add(child);
    child.once("exit", () => running.delete(child));
    const logs: string[] = [];
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    const url = await new Promise<string>((resolve, reject) => {
        let buf = "";
        child.stdout.setEncoding("utf8").on("data", (d: string) => {
            buf += d;
            let i;
            while ((i = buf.indexOf("\n")) >= 0) {
                const line = buf.slice(0, i);
                buf = buf.slice(i + 1);
                logs.push(line);
                try {
                    const o = JSON.parse(line);
                    if (o.msg === "egress service ready") resolve(o.url);
                } catch {
                    /* not a log line */
                }
            }
        });
        child.stderr.setEncoding("utf8").on("data", (d: string) => logs.push(d));
        exited.then((code) => reject(new Error(`egress serve exited with ${code} before it was ready:\n${logs.join("\n")}`)));
    });
    // A fresh connection per call: a kept-alive socket the server closes while idle (the test spends
    // seconds in CLI checks between calls) would fail the next request for reasons beside the point.
    const call = (method: string, route: string, body?: unknown) => new Promise<{ status: number; body: any }>((resolve, reject) => {
        const data = body === undefined ? undefined : JSON.stringify(body);
        const req = http.request(`${url}${route}`, { method, agent: false, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" } }, (res) => {
            let text = "";
            res.setEncoding("utf8").on("data", (d) => (text += d)).on("end", () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
        });
        req.on("error", (e) => reject(new Error(`${method} ${route}: ${e.message}; service (exit ${child.exitCode}) logged:\n${logs.slice(-15).join("\n")}`)));
        req.end(data);
    });
    return { child, url, logs, call, exited };
}

/** Polls until `fn` returns a truthy value (returned), or fails naming `what`. */
export async function until<T>(what: string, fn: () => T | Promise<T>, timeoutMs = 60_000, everyMs = 25): Promise<NonNullable<T>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const v = await fn();
        if (v) return v as NonNullable<T>;
        if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
        await new Promise((r) => setTimeout(r, everyMs));
    }
}

/** Waits until operation `id` settled and returns it. */
export async function settledOp(svc: ServeProcess, id: string, timeoutMs = 120_000): Promise<any> {
    return until(`operation ${id} to settle`, async () => {
        const op = (await svc.call("GET", `/v1/operations/${id}`)).body.operation;
        return op.status !== "queued" && op.status !== "running" ? op : undefined;
    }, timeoutMs, 100);
}

function readProc(pid: string, file: string): string | undefined {
    try {
        return fs.readFileSync(`/proc/${pid}/${file}`, "utf8");
    } catch {
        return undefined;
    }
}

/** Local proxy processes of `p`, as member id (argv `--id`) → pid (the same scan recovery and the reconcile loop use). */
export function proxyProcesses(p: ProcProject): Map<string, number> {
    return new Map([...runningProxies(p.stateDir)].map(([id, pids]) => [id, pids[0]]));
}

/** Engine processes (pulumi, its plugins) started by the egress process `ownerPid`: found by our run marker. */
export function engineProcessesOf(ownerPid: number): { pid: number; command: string }[] {
    const out: { pid: number; command: string }[] = [];
    for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
        const env = readProc(pid, "environ");
        if (!env?.split("\0").some((kv) => kv.startsWith(`${MARKER_VAR}=${ownerPid}.`))) continue;
        out.push({ pid: Number(pid), command: (readProc(pid, "cmdline") ?? "").split("\0").slice(0, 2).join(" ") });
    }
    return out;
}

/** Lock files (and their .attrs sidecars) in the project's file backend. */
export function backendLockFiles(p: ProcProject): string[] {
    const root = path.join(p.backendDir, ".pulumi", "locks");
    if (!fs.existsSync(root)) return [];
    return (fs.readdirSync(root, { recursive: true }) as string[]).filter((f) => f.endsWith(".json") || f.endsWith(".attrs"));
}
