/**
 * Members that share a process (`membersPerProcess` > 1): the provider's side of proxy-host.ts. A create
 * picks a live host of the stack's state dir with room (or starts one) and leaves it an order file; a
 * delete leaves a close order. Which host serves a member is in the member's ready file (`host`, `pid`).
 *
 * One engine run holds the stack's lock, and its creates and deletes all run in one provider process:
 * an in-process queue per state dir is enough to keep two creates from overfilling a host.
 */
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { classify } from "../shared/errors";
import { spawnDetached, type StartRequest, type Started } from "./start-request";

/** The host script, beside this file in the installed egress (dist/components/local/proxy-host.js). */
export const LOCAL_HOST_SCRIPT = path.join(__dirname, "proxy-host.js");

/** A host process as its argv names it. */
export interface HostArgv {
    host: string;
    dir: string;
    installation?: string;
}

/** The host argv of a live process; undefined when it is gone or is not a host. */
export function hostArgvOf(pid: number): HostArgv | undefined {
    let argv: string[];
    try {
        argv = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    } catch {
        return undefined;
    }
    return parseHostArgv(argv);
}

export function parseHostArgv(argv: string[]): HostArgv | undefined {
    const at = (flag: string) => (argv.includes(flag) ? argv[argv.indexOf(flag) + 1] : undefined);
    const host = at("--host");
    const dir = at("--dir");
    if (!host || !dir) return undefined;
    const installation = at("--installation");
    return { host, dir, ...(installation ? { installation } : {}) };
}

/** A member's ready file, when it names a host. */
export function hostedReady(stateDir: string, id: string): { pid: number; port: number; host: string } | undefined {
    try {
        const r = JSON.parse(fs.readFileSync(path.join(stateDir, `${id}.json`), "utf8"));
        return typeof r?.host === "string" && typeof r.pid === "number" ? r : undefined;
    } catch {
        return undefined;
    }
}

/**
 * True when `pid` is a live host of its state dir that serves member `id` (its ready file names both) and,
 * when `port` is given, serves it on that port: a replacement of the member (same id, a create before the
 * old one's delete) may be served by the same host on another port, and is not the old one.
 */
export function hostServes(pid: number, id: string, port?: number): boolean {
    const h = hostArgvOf(pid);
    if (!h) return false;
    const ready = hostedReady(h.dir, id);
    return ready?.pid === pid && ready.host === h.host && (port === undefined || ready.port === port);
}

/** Members served by live hosts of `stateDir`, by member id → host pid, for runningProxies. */
export function hostedMembers(stateDir: string, hosts: Map<number, HostArgv>): Map<string, number> {
    const found = new Map<string, number>();
    if (!hosts.size || !fs.existsSync(stateDir)) return found;
    for (const name of fs.readdirSync(stateDir)) {
        if (!name.endsWith(".json")) continue;
        const id = name.slice(0, -".json".length);
        const ready = hostedReady(stateDir, id);
        if (ready && hosts.get(ready.pid)?.host === ready.host) found.set(id, ready.pid);
    }
    return found;
}

/** Order files of a member (proxy-host.ts reads and removes them). */
export function orderFiles(stateDir: string, id: string) {
    return {
        want: path.join(stateDir, `${id}.want`),
        close: path.join(stateDir, `${id}.close`),
        error: path.join(stateDir, `${id}.error`),
    };
}

/** Hosts this process started, pid → host id: until its exec, a child's /proc cmdline is still ours. */
const spawned: Record<number, string> = {};

/** True while `pid` is host `host` (or, just spawned by us, is on its way to be). */
function hostAlive(pid: number, host: string): boolean {
    const argv = hostArgvOf(pid);
    if (argv) return argv.host === host;
    if (spawned[pid] !== host) return false;
    try {
        process.kill(pid, 0);
        return true;
    } catch {
        return false;
    }
}

/** Writes an order whole (a host never reads half of one), readable by this user only: it may hold credentials. */
function writeOrder(file: string, body: unknown): void {
    const tmp = `${file}.tmp`;
    fs.rmSync(tmp, { force: true });
    fs.writeFileSync(tmp, JSON.stringify(body), { mode: 0o600, flag: "wx" });
    fs.renameSync(tmp, file);
}

/** What this provider process knows of a state dir's hosts: host id → pid and members ordered or served. */
interface Hosts {
    pids: Map<string, number>;
    load: Map<string, number>;
    at: number;
}

/** Re-read from /proc and the ready files at most this often; in between, what this process did is counted. */
const HOSTS_FRESH_MS = 10_000;
// Plain objects, not Maps at the top level: components/ modules keep to what the closure serializer carries
// (test/integration/serialized-errors.test.ts), though this one is loaded from the installed egress.
const known: Record<string, Hosts> = Object.create(null);
const queues: Record<string, Promise<unknown>> = Object.create(null);

/** Runs `fn` after every earlier call for the same key has settled. */
function queued<T>(key: string, fn: () => Promise<T> | T): Promise<T> {
    const run = (queues[key] ?? Promise.resolve()).then(fn, fn);
    queues[key] = run.catch(() => undefined);
    return run;
}

function scanHosts(stateDir: string, installation: string | undefined): Hosts {
    const pids = new Map<string, number>();
    const byPid = new Map<number, HostArgv>();
    for (const entry of fs.readdirSync("/proc")) {
        if (!/^\d+$/.test(entry)) continue;
        const h = hostArgvOf(Number(entry));
        // Another installation's host in a shared run dir is never given our members.
        if (h && h.dir === stateDir && h.installation === installation) {
            pids.set(h.host, Number(entry));
            byPid.set(Number(entry), h);
        }
    }
    const load = new Map<string, number>();
    for (const pid of hostedMembers(stateDir, byPid).values()) {
        const host = byPid.get(pid)!.host;
        load.set(host, (load.get(host) ?? 0) + 1);
    }
    return { pids, load, at: Date.now() };
}

/** A live host of ours with room for one more member, or a new one; the member's order is written either way. */
function placeOrder(req: StartRequest, perProcess: number): { host: string; pid: number } {
    const stale = known[req.stateDir];
    const hosts =
        stale && Date.now() - stale.at < HOSTS_FRESH_MS ? stale : scanHosts(req.stateDir, req.installation?.id);
    known[req.stateDir] = hosts;
    const order = (host: string) =>
        writeOrder(orderFiles(req.stateDir, req.id).want, {
            id: req.id,
            host,
            port: req.port,
            ...(req.auth ? { auth: req.auth } : {}),
        });
    for (const [host, pid] of hosts.pids) {
        if ((hosts.load.get(host) ?? 0) >= perProcess) continue;
        if (!hostAlive(pid, host)) {
            hosts.pids.delete(host); // gone since the scan
            continue;
        }
        order(host);
        hosts.load.set(host, (hosts.load.get(host) ?? 0) + 1);
        return { host, pid };
    }
    const host = `host-${crypto.randomBytes(4).toString("hex")}`;
    order(host); // before the host starts: its first scan finds it
    const pid = spawnHost(req, host);
    hosts.pids.set(host, pid);
    hosts.load.set(host, 1);
    return { host, pid };
}

function spawnHost(req: StartRequest, host: string): number {
    const argv = [
        LOCAL_HOST_SCRIPT,
        "--host",
        host,
        "--dir",
        req.stateDir,
        ...(req.installation ? ["--installation", req.installation.id] : []),
    ];
    const child = spawnDetached(req.nodePath, argv, path.join(req.stateDir, `${host}.log`));
    if (!child.pid) throw classify(new Error(`could not start a local proxy host in ${req.stateDir}`), "transient");
    spawned[child.pid] = host;
    child.on("exit", () => delete spawned[child.pid!]);
    return child.pid;
}

/**
 * Starts member `req.id` on a shared host and waits until it listens. A host that exits before it takes
 * the order (it was idle and leaving) is replaced once; a refused listen (a port in use) is the error.
 */
export async function startHosted(req: StartRequest, perProcess: number, timeoutMs: number): Promise<Started> {
    const files = orderFiles(req.stateDir, req.id);
    fs.mkdirSync(req.stateDir, { recursive: true });
    for (let attempt = 1; ; attempt++) {
        fs.rmSync(files.error, { force: true });
        const placed = await queued(req.stateDir, () => placeOrder(req, perProcess));
        const deadline = Date.now() + timeoutMs;
        while (Date.now() < deadline) {
            const ready = hostedReady(req.stateDir, req.id);
            if (ready?.pid === placed.pid && ready.host === placed.host) return { pid: ready.pid, port: ready.port };
            if (fs.existsSync(files.error)) {
                const message = JSON.parse(fs.readFileSync(files.error, "utf8")).message as string;
                fs.rmSync(files.error, { force: true });
                const failed = new Error(
                    `local proxy ${req.id} did not start listening on port ${req.port || "(any)"}: ${message}`,
                );
                throw /EADDRINUSE/.test(message) ? classify(failed, "transient") : failed;
            }
            if (!hostAlive(placed.pid, placed.host)) break;
            await new Promise((r) => setTimeout(r, 25));
        }
        fs.rmSync(files.want, { force: true });
        delete known[req.stateDir];
        if (attempt >= 2 || Date.now() >= deadline)
            throw classify(
                new Error(
                    `local proxy ${req.id}: host ${placed.host} (pid ${placed.pid}) did not serve it; see ${placed.host}.log`,
                ),
                "transient",
            );
    }
}

/**
 * Has host `pid` stop serving member `id` (on `port` only, when given: the generation being deleted, not a
 * replacement the same host serves under the same id); returns once the ready file no longer names it.
 */
export async function stopHosted(pid: number, id: string, stateDir: string, port?: number): Promise<void> {
    const h = hostArgvOf(pid);
    if (!h || !hostServes(pid, id, port)) return;
    const files = orderFiles(stateDir, id);
    writeOrder(files.close, { id, host: h.host, ...(port !== undefined ? { port } : {}) });
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
        if (!hostServes(pid, id, port)) {
            const load = known[stateDir]?.load;
            if (load?.has(h.host)) load.set(h.host, Math.max(0, load.get(h.host)! - 1));
            return;
        }
        await new Promise((r) => setTimeout(r, 25));
    }
    fs.rmSync(files.close, { force: true });
    throw classify(
        new Error(`local proxy host ${h.host} (pid ${pid}) did not close member ${id} within 5 s`),
        "transient",
    );
}

/** Removes the log of the dead host that served member `id` (a killed host cannot remove its own). */
export function removeDeadHostLog(stateDir: string, id: string): void {
    const ready = hostedReady(stateDir, id);
    if (ready && hostArgvOf(ready.pid)?.host !== ready.host)
        fs.rmSync(path.join(stateDir, `${ready.host}.log`), { force: true });
}
