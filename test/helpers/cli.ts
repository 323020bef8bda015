import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { engineHome, PACKAGE_ROOT } from "../../src/engine/env";
import { OFFLINE_ENV } from "./project";

const cli = path.join(PACKAGE_ROOT, "dist", "src", "cli.js");

export interface CliRun {
    code: number | null;
    stdout: string;
    stderr: string;
    /** Wall-clock time the process exited. */
    exitedAt: number;
}

/** Runs the real `egress` CLI as a child process (async, so a service in this process keeps serving). */
export function runCli(env: Record<string, string>, args: string[], timeoutMs = 120_000): Promise<CliRun> {
    return new Promise((resolve, reject) => {
        const child = cp.spawn(process.execPath, [cli, ...args], {
            env: { ...process.env, ...OFFLINE_ENV, ...env },
            stdio: ["ignore", "pipe", "pipe"],
        });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (c) => (stdout += c));
        child.stderr.on("data", (c) => (stderr += c));
        const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
        child.on("error", reject);
        child.on("close", (code) => {
            clearTimeout(timer);
            resolve({ code, stdout, stderr, exitedAt: Date.now() });
        });
    });
}

/**
 * An egress home for CLI runs in tests: the real engine (`bin` linked to the one `npm run setup` built)
 * and its own run dir, which a test service shares by being started with `runDir: home.runDir`.
 */
export function testHome(): { dir: string; runDir: string; cleanup(): void } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-home-"));
    const bin = engineHome().binDir;
    if (!fs.existsSync(path.join(bin, "pulumi")))
        throw new Error(`the Pulumi CLI is missing at ${bin}/pulumi: run \`npm run setup\``);
    fs.symlinkSync(bin, path.join(dir, "bin"));
    return { dir, runDir: path.join(dir, "run"), cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Another process holding the stack's writer lock, as the CLI would: resolves once it holds it. Kill it
 * with SIGKILL to leave a stale lock behind.
 */
export async function holdWriterLock(runDir: string, stack: string, command = "test holder"): Promise<cp.ChildProcess> {
    const mod = path.join(PACKAGE_ROOT, "dist", "src", "engine", "writer-lock.js");
    const script = `require(${JSON.stringify(mod)}).acquireWriterLock({ runDir: ${JSON.stringify(runDir)}, stack: ${JSON.stringify(stack)}, command: ${JSON.stringify(command)}, waitMs: 0 }).then(() => { process.stdout.write("held\\n"); setInterval(() => {}, 1000); }, (e) => { process.stderr.write(String(e)); process.exit(1); });`;
    const child = cp.spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "pipe"] });
    await new Promise<void>((resolve, reject) => {
        let err = "";
        child.stderr!.on("data", (c) => (err += c));
        child.stdout!.on("data", (c) => String(c).includes("held") && resolve());
        child.on("exit", (code) => reject(new Error(`lock holder exited with ${code}: ${err}`)));
    });
    return child;
}

/** SIGKILLs a child and waits until it is gone (reaped), so its pid is free. */
export async function killHard(child: cp.ChildProcess): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await gone;
}
