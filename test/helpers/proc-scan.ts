/**
 * What runs on this machine for a test project, read from /proc: its local proxies, the engine processes
 * an egress process started, and the file backend's lock files. Re-exported by processes.ts.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { MARKER_VAR } from "../../src/engine/leftovers";
import { runningProxies } from "../../components/local/process";
import type { ProcProject } from "./proc-project";

function readProc(pid: string, file: string): string | undefined {
    try {
        return fs.readFileSync(`/proc/${pid}/${file}`, "utf8");
    } catch {
        return undefined;
    }
}

/** Local proxy processes of `p`, as member id (argv `--id`) → pid (the same scan recovery and the reconcile loop use). */
export function proxyProcesses(p: Pick<ProcProject, "stateDir">): Map<string, number> {
    return new Map([...runningProxies(p.stateDir)].map(([id, pids]) => [id, pids[0]]));
}

/**
 * Engine processes (pulumi, its plugins) started by the egress process `ownerPid`: found by our run marker.
 * `environ` is the environment the marker was read from: a process forked by a plugin (a local proxy
 * between fork and exec) carries the plugin's environment only until its exec, so a second read may see
 * another process's.
 */
export function engineProcessesOf(ownerPid: number): { pid: number; command: string; environ: string }[] {
    const out: { pid: number; command: string; environ: string }[] = [];
    for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
        const env = readProc(pid, "environ");
        if (!env?.split("\0").some((kv) => kv.startsWith(`${MARKER_VAR}=${ownerPid}.`))) continue;
        const command = (readProc(pid, "cmdline") ?? "").split("\0").slice(0, 2).join(" ");
        out.push({ pid: Number(pid), command, environ: env });
    }
    return out;
}

/**
 * Wedges the engine of `ownerPid` (a step stuck in a provider, a hung CLI): SIGSTOPs the CLI's update and
 * its plugins, so the update cannot finish and a cancel cannot end it. A process that exits between the
 * scan and its signal (the preview's plugin host ending as the update starts) is not stuck: it is skipped.
 * Returns the processes stopped; the caller asserts there are enough.
 */
export function wedgeEngine(ownerPid: number): { pid: number; command: string }[] {
    const stopped: { pid: number; command: string }[] = [];
    for (const e of engineProcessesOf(ownerPid)) {
        if (!/pulumi( up|-resource-|-language-)/.test(e.command)) continue;
        try {
            process.kill(e.pid, "SIGSTOP");
            stopped.push({ pid: e.pid, command: e.command });
        } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err;
        }
    }
    return stopped;
}

/**
 * The engine of the egress process `ownerPid` is inside an update that holds the stack's lock: a
 * `pulumi up`, `refresh` or `destroy` runs, and it has started its dynamic-provider plugin, which it does
 * once it runs the program, after it took the lock in the backend. A `pulumi preview` (a scale previews
 * first, for the members it would replace) starts the plugin too, but takes no lock: it does not count.
 */
export function engineUpdating(ownerPid: number): boolean {
    const engine = engineProcessesOf(ownerPid);
    return (
        engine.some((e) => / (up|refresh|destroy)$/.test(e.command)) &&
        engine.some((e) => e.command.includes("pulumi-resource-pulumi-nodejs"))
    );
}

/** Lock files (and their .attrs sidecars) in the project's file backend. */
export function backendLockFiles(p: Pick<ProcProject, "backendDir">): string[] {
    const root = path.join(p.backendDir, ".pulumi", "locks");
    if (!fs.existsSync(root)) return [];
    return (fs.readdirSync(root, { recursive: true }) as string[]).filter(
        (f) => f.endsWith(".json") || f.endsWith(".attrs"),
    );
}

/** A process's environment as `NAME=value\0…` ("" once it exited). */
export function environOf(pid: number): string {
    try {
        return fs.readFileSync(`/proc/${pid}/environ`, "utf8");
    } catch {
        return ""; // exited between listing and reading
    }
}
