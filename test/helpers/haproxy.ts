/**
 * A throwaway HAProxy for one test, mirroring redis.ts: deploy/haproxy.cfg rendered with the test's
 * loopback ports (`renderHaproxyCfg`: the frontends' binds, one server line per replica built from
 * the file's own first server line, so its checks and options are the deployed ones), run in its own
 * temp dir, its admin socket there for `show stat`, killed with the test process. Fails loudly (never
 * skips) when haproxy is missing or does not start.
 */
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { PACKAGE_ROOT } from "../../src/engine/env";
import { ensureTestPackages } from "./deps";

export const HAPROXY = "/usr/sbin/haproxy";
export const HAPROXY_CFG = path.join(PACKAGE_ROOT, "deploy", "haproxy.cfg");

export interface Replica {
    apiPort: number;
    gatewayPort: number;
}

export interface TestHaproxy {
    apiPort: number;
    gatewayPort: number;
    dir: string;
    /** What HAProxy logged (stdout and stderr). */
    log(): string;
    /** `show stat` on the admin socket: one row per frontend, backend and server. */
    stat(): Promise<{ pxname: string; svname: string; status: string; stot: number }[]>;
    /** Resolves once `count` servers of `backend` are UP (its checks pass); throws with HAProxy's log after `timeoutMs`. */
    untilUp(backend: string, count: number, timeoutMs?: number): Promise<void>;
    /** Kills it and removes its dir. */
    cleanup(): Promise<void>;
}

/** The binary, installed by scripts/install-test-deps.sh when missing; throws when it is not there. */
export function haproxyBin(): string {
    ensureTestPackages();
    if (!fs.existsSync(HAPROXY))
        throw new Error(`${HAPROXY} is missing: scripts/install-test-deps.sh installs Debian's haproxy`);
    return HAPROXY;
}

/**
 * deploy/haproxy.cfg for a test: frontends on `apiPort`/`gatewayPort`, `replicas` as the servers, the
 * admin socket in `dir`. The lines that only fit a system install (user, group, chroot) are dropped:
 * the test runs it as its own user; `maxconn` becomes 2000, since 20000 needs a file limit of 40000
 * (systemd's default hard limit, 524288, has it; a test machine's may not).
 */
export function renderHaproxyCfg(o: {
    apiPort: number;
    gatewayPort: number;
    replicas: Replica[];
    dir: string;
}): string {
    const out: string[] = [];
    let section = "";
    let servers: string[] | undefined;
    for (const line of fs.readFileSync(HAPROXY_CFG, "utf8").split("\n")) {
        const t = line.trim();
        if (/^(global|defaults|frontend|backend|listen)\b/.test(line)) {
            section = t;
            servers = undefined;
        }
        if (/^(user|group|chroot) /.test(t)) continue;
        if (t.startsWith("maxconn ") && section === "global") out.push(line.replace(/maxconn \d+/, "maxconn 2000"));
        else if (t.startsWith("stats socket "))
            out.push(line.replace(/stats socket \S+/, `stats socket ${path.join(o.dir, "admin.sock")}`));
        else if (t.startsWith("bind ") && section === "frontend egress_api")
            out.push(line.replace(/127\.0\.0\.1:\d+/, `127.0.0.1:${o.apiPort}`));
        else if (t.startsWith("bind ") && section === "frontend egress_gateway")
            out.push(line.replace(/127\.0\.0\.1:\d+/, `127.0.0.1:${o.gatewayPort}`));
        else if (t.startsWith("server ")) {
            if (servers) continue; // the file's further replicas: replaced by the test's
            const gateway = section === "backend egress_gateway_replicas";
            servers = o.replicas.map((r, i) =>
                line
                    .replace(
                        /server \S+ 127\.0\.0\.1:\d+/,
                        `server egress-${i + 1} 127.0.0.1:${gateway ? r.gatewayPort : r.apiPort}`,
                    )
                    .replace(/ port \d+/, ` port ${r.apiPort}`),
            );
            out.push(...servers);
        } else out.push(line);
    }
    return out.join("\n");
}

/** Resolves once something accepts connections on 127.0.0.1:`port`. */
async function accepting(port: number, timeoutMs: number, exited: () => string | undefined): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const ok = await new Promise<boolean>((resolve) => {
            const s = net.connect(port, "127.0.0.1");
            s.once("connect", () => (s.destroy(), resolve(true)));
            s.once("error", () => resolve(false));
        });
        if (ok) return;
        const gone = exited();
        if (gone) throw new Error(gone);
        if (Date.now() > deadline)
            throw new Error(`haproxy did not listen on 127.0.0.1:${port} within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 50));
    }
}

/** Sends one command to the admin socket and reads the answer to its end. */
function adminCommand(socket: string, command: string): Promise<string> {
    return new Promise((resolve, reject) => {
        const s = net.connect(socket);
        let got = "";
        s.setEncoding("utf8");
        s.on("connect", () => s.write(`${command}\n`));
        s.on("data", (d) => (got += d));
        s.on("end", () => resolve(got));
        s.on("error", reject);
    });
}

export async function startHaproxy(o: {
    apiPort: number;
    gatewayPort: number;
    replicas: Replica[];
}): Promise<TestHaproxy> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-haproxy-"));
    const run = await runHaproxy(dir, renderHaproxyCfg({ ...o, dir }), [o.apiPort, o.gatewayPort]);
    return { apiPort: o.apiPort, gatewayPort: o.gatewayPort, ...run };
}

/** Where deploy/haproxy-redis.cfg keeps HAProxy in front of Redis' data nodes. */
export const HAPROXY_REDIS_CFG = path.join(PACKAGE_ROOT, "deploy", "haproxy-redis.cfg");

/**
 * deploy/haproxy-redis.cfg for a test: its listener on `port`, `nodes` as its servers (from the file's
 * first server line), `password` for its checks, the admin socket in `dir`, system-only lines dropped.
 */
export function renderRedisHaproxyCfg(o: { port: number; nodes: number[]; password: string; dir: string }): string {
    const out: string[] = [];
    let servers = false;
    for (const line of fs.readFileSync(HAPROXY_REDIS_CFG, "utf8").split("\n")) {
        const t = line.trim();
        if (/^(user|group|chroot) /.test(t)) continue;
        if (t.startsWith("stats socket "))
            out.push(line.replace(/stats socket \S+/, `stats socket ${path.join(o.dir, "admin.sock")}`));
        else if (t.startsWith("bind ")) out.push(line.replace(/127\.0\.0\.1:\d+/, `127.0.0.1:${o.port}`));
        else if (t.startsWith("tcp-check send AUTH")) out.push(line.replace("CHANGE-ME", o.password));
        else if (t.startsWith("server ")) {
            if (servers) continue;
            servers = true;
            out.push(
                ...o.nodes.map((port, i) =>
                    line.replace(/server \S+ 127\.0\.0\.1:\d+/, `server redis-${i + 1} 127.0.0.1:${port}`),
                ),
            );
        } else out.push(line);
    }
    return out.join("\n");
}

/** HAProxy from deploy/haproxy-redis.cfg in front of Redis nodes on loopback, listening on `port`. */
export async function startRedisHaproxy(o: {
    port: number;
    nodes: number[];
    password: string;
}): Promise<Omit<TestHaproxy, "apiPort" | "gatewayPort"> & { port: number }> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-haproxy-redis-"));
    return { port: o.port, ...(await runHaproxy(dir, renderRedisHaproxyCfg({ ...o, dir }), [o.port])) };
}

/** Runs haproxy on config `text` in `dir` until cleanup; resolves once it accepts on every port of `ports`. */
async function runHaproxy(
    dir: string,
    text: string,
    ports: number[],
): Promise<Omit<TestHaproxy, "apiPort" | "gatewayPort">> {
    const bin = haproxyBin();
    const cfg = path.join(dir, "haproxy.cfg");
    fs.writeFileSync(cfg, text, { mode: 0o600 });
    let log = "";
    // -db: foreground, no daemon; its stdout is the `log stdout` target.
    const child = cp.spawn(bin, ["-db", "-f", cfg], { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.setEncoding("utf8").on("data", (d) => (log += d));
    child.stderr.setEncoding("utf8").on("data", (d) => (log += d));
    const killNow = () => child.exitCode === null && child.signalCode === null && child.kill("SIGKILL");
    process.once("exit", killNow);
    const exitedWith = () =>
        child.exitCode !== null || child.signalCode !== null
            ? `haproxy exited with ${child.exitCode ?? child.signalCode} at start; it said:\n${log}`
            : undefined;
    for (const port of ports) await accepting(port, 10_000, exitedWith);
    const stat: TestHaproxy["stat"] = async () => {
        const csv = await adminCommand(path.join(dir, "admin.sock"), "show stat");
        const [head, ...rows] = csv.trim().split("\n");
        const cols = head.replace(/^# /, "").split(",");
        const at = (name: string) => cols.indexOf(name);
        return rows.map((r) => {
            const f = r.split(",");
            return {
                pxname: f[at("pxname")],
                svname: f[at("svname")],
                status: f[at("status")],
                stot: Number(f[at("stot")]),
            };
        });
    };
    return {
        dir,
        log: () => log,
        stat,
        async untilUp(backend, count, timeoutMs = 10_000) {
            const deadline = Date.now() + timeoutMs;
            for (;;) {
                const up = (await stat()).filter(
                    (r) => r.pxname === backend && r.svname !== "BACKEND" && r.status === "UP",
                );
                if (up.length >= count) return;
                if (Date.now() > deadline)
                    throw new Error(`HAProxy did not mark ${count} servers of ${backend} up:\n${log}`);
                await new Promise((r) => setTimeout(r, 100));
            }
        },
        async cleanup() {
            process.removeListener("exit", killNow);
            if (child.exitCode === null && child.signalCode === null)
                await new Promise((r) => {
                    child.once("exit", r);
                    child.kill("SIGKILL");
                });
            fs.rmSync(dir, { recursive: true, force: true });
        },
    };
}
