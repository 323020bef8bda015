/**
 * A process that serves many local members (`membersPerProcess` > 1): one proxy-chain listener per
 * member, in one Node process, so a fleet of a thousand needs tens of processes, not a thousand
 * (docs/decisions/0077-members-per-process.md).
 *
 * argv: --host <host id> --dir <state dir> [--installation <id>]
 * It takes its orders from files in the state dir, written by the provider (hosts.ts):
 * - `<member>.want` (0600) `{id, host, port, auth?}`: serve this member. Once listening it writes the
 *   member's ready file `<member>.json` `{id, pid, port, host, installation}` (atomically) and removes the
 *   order; a failure goes to `<member>.error` `{message}`. The credentials never reach argv or the environment.
 * - `<member>.close` `{id, host, port?}`: stop serving it (with `port`, only its listener on that port: a
 *   replacement served under the same id stays), remove its ready file and the order.
 * Orders are seen through inotify and a scan every second. With no member left it exits, and removes its log.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import pino from "pino";
// A script of its own (spawned, never serialized into a dynamic provider), so it may load pino at the top.
import { createLogger } from "../../src/log/logger";
import { type Credentials, type OpenProxy, openProxy } from "./proxy-listener";

const log = createLogger({
    base: { component: "local-proxy-host" },
    destination: pino.destination({ dest: 1, sync: true }),
});

function arg(name: string): string | undefined {
    const i = process.argv.indexOf(`--${name}`);
    return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : undefined;
}

const host = arg("host");
const dir = arg("dir");
const installation = arg("installation");
if (!host || !dir) {
    log.error("proxy-host: --host and --dir are required");
    process.exit(2);
}

/** How long a host with no member waits for one before it exits (a new host's first order is on its way). */
const IDLE_EXIT_MS = 3000;

/** Members served, by id. A plain object: components/ modules keep no top-level Map (serialized-errors test). */
const served: Record<string, OpenProxy> = Object.create(null);
const servedCount = () => Object.keys(served).length;
let idleSince = Date.now();

interface Order {
    id: string;
    host: string;
    port?: number;
    auth?: Credentials;
}

function readOrder(file: string): Order | undefined {
    try {
        const order = JSON.parse(fs.readFileSync(file, "utf8")) as Order;
        return typeof order?.id === "string" && order.host === host ? order : undefined;
    } catch {
        return undefined; // half-written or taken meanwhile: the next scan sees it whole
    }
}

function writeAtomically(file: string, body: unknown): void {
    fs.writeFileSync(`${file}.tmp`, JSON.stringify(body));
    fs.renameSync(`${file}.tmp`, file);
}

async function serve(order: Order, file: string): Promise<void> {
    fs.rmSync(file, { force: true });
    await served[order.id]?.close(); // a create again after a lost run: the new order wins
    delete served[order.id];
    try {
        const proxy = await openProxy(order.port ?? 0, order.auth);
        served[order.id] = proxy;
        log.info({ id: order.id, port: proxy.port, auth: !!order.auth }, "listening");
        const ready = {
            id: order.id,
            pid: process.pid,
            port: proxy.port,
            host,
            ...(installation ? { installation } : {}),
        };
        writeAtomically(path.join(dir!, `${order.id}.json`), ready);
    } catch (e) {
        log.error({ id: order.id, err: e }, "failed to start");
        writeAtomically(path.join(dir!, `${order.id}.error`), { message: (e as Error).message });
    }
}

async function close(order: Order, file: string): Promise<void> {
    const current = served[order.id];
    if (current && order.port !== undefined && current.port !== order.port) {
        fs.rmSync(file, { force: true });
        log.info(
            { id: order.id, port: order.port, serving: current.port },
            "close of an earlier listener: kept the current one",
        );
        return;
    }
    await current?.close();
    delete served[order.id];
    const ready = path.join(dir!, `${order.id}.json`);
    try {
        if (JSON.parse(fs.readFileSync(ready, "utf8")).pid === process.pid) fs.rmSync(ready, { force: true });
    } catch {
        /* already gone */
    }
    fs.rmSync(file, { force: true });
    log.info({ id: order.id }, "closed");
}

let scanning = false;
let again = false;

/** Carries out every order addressed to this host; one scan at a time, and one more if asked meanwhile. */
async function scan(): Promise<void> {
    if (scanning) return void (again = true);
    scanning = true;
    try {
        do {
            again = false;
            for (const name of fs.readdirSync(dir!)) {
                const file = path.join(dir!, name);
                if (name.endsWith(".want")) {
                    const order = readOrder(file);
                    if (order) await serve(order, file);
                } else if (name.endsWith(".close")) {
                    const order = readOrder(file);
                    if (order) await close(order, file);
                }
            }
        } while (again);
    } finally {
        scanning = false;
    }
    if (servedCount() > 0) idleSince = Date.now();
    else if (Date.now() - idleSince > IDLE_EXIT_MS) exit("idle", true);
}

let exiting = false;

function exit(reason: string, removeLog: boolean): void {
    if (exiting) return;
    exiting = true;
    log.info({ host, reason, members: servedCount() }, "stopping");
    if (removeLog) fs.rmSync(path.join(dir!, `${host}.log`), { force: true });
    Promise.allSettled(Object.values(served).map((p) => p.close())).finally(() => process.exit(0));
    setTimeout(() => process.exit(0), 2000).unref();
}

process.on("SIGTERM", () => exit("SIGTERM", false));
process.on("SIGINT", () => exit("SIGINT", false));
const rescan = () =>
    void scan().catch((e) => {
        // Its state dir removed (a stack's files wiped, a test's temp dir): nothing can reach its members any more.
        if ((e as NodeJS.ErrnoException).code === "ENOENT" && !fs.existsSync(dir)) exit("state dir removed", false);
        else log.error({ err: e }, "scan failed");
    });
// Only orders wake a scan: the ready files this and other hosts write are no news.
fs.watch(dir, { persistent: true }, (_event, name) => {
    if (!name || /\.(want|close)$/.test(String(name))) rescan();
});
setInterval(rescan, 1000);
log.info({ host, dir }, "host started");
rescan();
