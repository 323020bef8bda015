/**
 * Lifecycle of local proxy processes: start detached, inspect, stop. Used by the LocalProxy dynamic
 * provider. A member has a process of its own (`--id <id>`), or shares a host process (hosts.ts). The
 * `require`s inside functions date from when the provider was serialized into state; it is now loaded from
 * the installed egress (components/shared/dynamic.ts), and state older than that still holds such code.
 */
import { foreignInstallationMessage } from "../../src/model/installation";
import { classify } from "../shared/errors";
import {
    hostArgvOf,
    hostServes,
    hostedMembers,
    orderFiles,
    parseHostArgv,
    removeDeadHostLog,
    startHosted,
    stopHosted,
} from "./hosts";
import type { HostArgv } from "./hosts";

/** The proxy's script, beside this file in the installed egress (dist/components/local/proxy-server.js). */
export const LOCAL_SERVER_SCRIPT = (require("node:path") as typeof import("node:path")).join(
    __dirname,
    "proxy-server.js",
);

export type { StartRequest, Started } from "./start-request";
import { spawnDetached, type StartRequest, type Started } from "./start-request";

/** Files kept per proxy under the stack's state dir. */
export function proxyFiles(stateDir: string, id: string) {
    const path = require("node:path") as typeof import("node:path");
    return {
        ready: path.join(stateDir, `${id}.json`),
        log: path.join(stateDir, `${id}.log`),
        auth: path.join(stateDir, `${id}.auth`),
    };
}

/** Starts a detached proxy and waits until it listens. On failure nothing is left running. */
export async function startProxy(req: StartRequest, timeoutMs = 15000): Promise<Started> {
    const fs = require("node:fs") as typeof import("node:fs");
    fs.mkdirSync(req.stateDir, { recursive: true });
    const files = proxyFiles(req.stateDir, req.id);
    // IDs are deterministic, so a process a killed run started for this very member may still be up:
    // stop it first, and the create is the same whether or not an earlier attempt got that far.
    const running = findProxyProcesses(req.stateDir, req.id);
    if (req.installation) {
        const ours = req.installation;
        for (const pid of running) {
            const theirs = proxyInstallation(pid);
            if (!(theirs === ours.id || (ours.legacy && theirs === undefined)))
                throw new Error(
                    foreignInstallationMessage(
                        `local proxy ${req.id} (pid ${pid}) in ${req.stateDir}`,
                        ours.id,
                        theirs,
                    ),
                );
        }
    }
    for (const pid of running) await stopProxy(pid, req.id, req.stateDir);
    removeDeadHostLog(req.stateDir, req.id); // a replacement is created before the dead one's delete
    fs.rmSync(files.ready, { force: true });
    fs.rmSync(files.auth, { force: true });
    if ((req.membersPerProcess ?? 1) > 1) return startHosted(req, req.membersPerProcess!, timeoutMs);
    // Never argv or the environment (both readable in /proc by any local user): a file only we can read,
    // created with its mode (never widened after the fact), which the proxy removes once read.
    if (req.auth) fs.writeFileSync(files.auth, JSON.stringify(req.auth), { mode: 0o600, flag: "wx" });
    const argv = [
        req.serverScript,
        "--id",
        req.id,
        "--port",
        String(req.port),
        "--ready",
        files.ready,
        ...(req.auth ? ["--auth", files.auth] : []),
        ...(req.installation ? ["--installation", req.installation.id] : []),
    ];
    const child = spawnDetached(req.nodePath, argv, files.log);
    let exited: number | null = null;
    child.on("exit", (code) => (exited = code ?? -1));
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
        if (fs.existsSync(files.ready)) {
            const info = JSON.parse(fs.readFileSync(files.ready, "utf8"));
            return { pid: info.pid, port: info.port };
        }
        if (exited !== null) break;
        await new Promise((r) => setTimeout(r, 50));
    }
    if (child.pid) killQuietly(child.pid);
    const tail = fs.existsSync(files.log)
        ? fs.readFileSync(files.log, "utf8").trim().split("\n").slice(-3).join(" | ")
        : "";
    fs.rmSync(files.auth, { force: true });
    fs.rmSync(files.log, { force: true }); // transactional: a failed create leaves nothing (the tail is in the error)
    const failed = new Error(
        `local proxy ${req.id} did not start listening on port ${req.port || "(any)"}: ${exited !== null ? `exited with ${exited}` : "timed out"}${tail ? `; log: ${tail}` : ""}`,
    );
    // A port another process holds may be let go (a proxy still exiting, a short-lived server): the next
    // up tries again (the service's reconcile loop does, after its back-off). Anything else needs a person.
    throw /EADDRINUSE/.test(tail) ? classify(failed, "transient") : failed;
}

/**
 * True when `pid` is alive and is the proxy process for `id` (not a foreign process that reused the pid).
 * Recognised by its argv, not by src/engine/process-identity.ts's start time: this runs inside the
 * serialized dynamic provider, and the proxy's id is what state records about it.
 */
export function isOurProcess(pid: number, id: string): boolean {
    const fs = require("node:fs") as typeof import("node:fs");
    try {
        process.kill(pid, 0);
    } catch {
        return false;
    }
    try {
        const argv = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
        const i = argv.indexOf("--id");
        // A shared host (hosts.ts) carries no member id: its member's ready file names it.
        return (i >= 0 && argv[i + 1] === id) || (parseHostArgv(argv) !== undefined && hostServes(pid, id));
    } catch {
        return false; // no /proc entry: it is gone (or not ours to judge)
    }
}

/**
 * Live proxy processes of this state dir, by proxy id → pids, found by their own argv (`--id <id>` and
 * `--ready <stateDir>/<id>.json`), whether or not they got as far as writing the ready file. One scan
 * of /proc, whatever the number of proxies.
 */
export function runningProxies(stateDir: string): Map<string, number[]> {
    const fs = require("node:fs") as typeof import("node:fs");
    const found = new Map<string, number[]>();
    const hosts = new Map<number, HostArgv>();
    for (const entry of fs.readdirSync("/proc")) {
        if (!/^\d+$/.test(entry)) continue;
        let argv: string[];
        try {
            argv = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
        } catch {
            continue; // exited while we looked
        }
        const at = (flag: string) => (argv.includes(flag) ? argv[argv.indexOf(flag) + 1] : undefined);
        const id = at("--id");
        if (id && at("--ready") === proxyFiles(stateDir, id).ready)
            found.set(id, [...(found.get(id) ?? []), Number(entry)]);
        const host = parseHostArgv(argv);
        if (host?.dir === stateDir) hosts.set(Number(entry), host);
    }
    for (const [id, pid] of hostedMembers(stateDir, hosts)) found.set(id, [...(found.get(id) ?? []), pid]);
    return found;
}

/** The `--installation` of a live proxy process; undefined when it has none (started before installation ids) or is gone. */
export function proxyInstallation(pid: number): string | undefined {
    const fs = require("node:fs") as typeof import("node:fs");
    try {
        const argv = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
        const i = argv.indexOf("--installation");
        return i >= 0 ? argv[i + 1] : undefined;
    } catch {
        return undefined;
    }
}

/** Live processes that are the proxy `id` of this state dir (see runningProxies). */
export function findProxyProcesses(stateDir: string, id: string): number[] {
    return runningProxies(stateDir).get(id) ?? [];
}

export { portAnswers } from "../shared/net";

/**
 * Stops the proxy for `id` if it still runs, then removes its files. Succeeds when it is already gone.
 * `port`: the generation being deleted listens there (a delete after its replacement's create, which
 * may share its host); unset: whatever serves `id` now is stopped (a create clearing the way).
 */
export async function stopProxy(pid: number, id: string, stateDir: string, port?: number): Promise<void> {
    const fs = require("node:fs") as typeof import("node:fs");
    if (port === undefined) fs.rmSync(orderFiles(stateDir, id).want, { force: true }); // an order not yet taken is withdrawn
    if (hostArgvOf(pid)) {
        await stopHosted(pid, id, stateDir, port); // the host serves others: only this member stops
    } else if (isOurProcess(pid, id)) {
        signal(pid, "SIGTERM");
        const deadline = Date.now() + 5000;
        while (Date.now() < deadline && isOurProcess(pid, id)) await new Promise((r) => setTimeout(r, 50));
        if (isOurProcess(pid, id)) signal(pid, "SIGKILL");
    }
    const files = proxyFiles(stateDir, id);
    // A replacement created before this delete (a forced replace runs create-before-delete) shares the
    // id and so the file names: its files are not this process's to remove.
    try {
        const current = JSON.parse(fs.readFileSync(files.ready, "utf8")) as { pid: number; port: number };
        const another = current.pid !== pid || (port !== undefined && current.port !== port);
        if (another && isOurProcess(current.pid, id)) return;
    } catch {
        /* no ready file, or half-written: nothing to keep */
    }
    removeDeadHostLog(stateDir, id);
    fs.rmSync(files.ready, { force: true });
    fs.rmSync(files.log, { force: true });
    fs.rmSync(files.auth, { force: true });
}

function killQuietly(pid: number): void {
    signal(pid, "SIGKILL");
}

/** Sends a signal; a process that exited meanwhile (ESRCH) is what we wanted anyway. */
function signal(pid: number, sig: NodeJS.Signals): void {
    try {
        process.kill(pid, sig);
    } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ESRCH") throw e;
    }
}
