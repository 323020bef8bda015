/**
 * A throwaway redis-server for one test: on a free loopback port, in its own temp dir, with a password
 * (so tests can look for it where it must not be), no persistence unless `aof` asks for it. `kill` (or
 * `stop`) and `start` again keep the port and the dir, so an AOF restart finds its keys. Fails loudly (never
 * skips) when redis-server is missing or does not start.
 */
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { ensureTestPackages } from "./deps";
import { freeLoopbackPort } from "./net";

export interface TestRedis {
    port: number;
    password: string;
    /** redis://:<password>@127.0.0.1:<port> */
    url: string;
    dir: string;
    /** Starts it again on the same port and dir (after `kill`). */
    start(): Promise<void>;
    /** SIGKILL: the bad day, not a clean shutdown. */
    kill(): Promise<void>;
    /** SIGTERM: Redis' own shutdown (it writes the AOF out), waited for. */
    stop(): Promise<void>;
    /** Kills it and removes its dir. */
    cleanup(): Promise<void>;
    /** The running server's process id (benches read its CPU time from /proc). */
    pid(): number | undefined;
}

const BIN = "/usr/bin/redis-server";

/** Resolves once the server answers PING on its port (redis' inline protocol: no client needed). */
async function answersPing(port: number, password: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const ok = await new Promise<boolean>((resolve) => {
            const s = net.connect(port, "127.0.0.1");
            let got = "";
            s.on("connect", () => s.write(`AUTH ${password}\r\nPING\r\n`));
            s.on("data", (d) => {
                got += d;
                if (got.includes("+PONG")) {
                    s.destroy();
                    resolve(true);
                }
            });
            s.on("error", () => resolve(false));
            s.setTimeout(500, () => {
                s.destroy();
                resolve(false);
            });
        });
        if (ok) return;
        if (Date.now() > deadline)
            throw new Error(`redis-server on 127.0.0.1:${port} did not answer PING within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 50));
    }
}

/**
 * A file or bench that dies before its cleanup (a failed start, an uncaught error) leaves no server: one
 * `exit` listener kills every server still live.
 */
const live = new Set<() => void>();
function atExit(kill: () => void): void {
    if (live.size === 0 && process.listeners("exit").every((l) => l !== killLive)) process.once("exit", killLive);
    live.add(kill);
}
function killLive(): void {
    for (const kill of live) kill();
}

export async function startRedis(
    opts: {
        aof?: boolean;
        /** appendfsync with `aof`: `always` (the default here: nothing lost to a SIGKILL) or production's `everysec`. */
        fsync?: "always" | "everysec";
        /** Shared by a primary, its replicas and sentinels (test/helpers/redis-sentinel.ts); random otherwise. */
        password?: string;
        /** A replica of the primary on this loopback port (`--replicaof`, authenticated with `password`). */
        replicaOf?: number;
        /** A sentinel (`redis-server <conf> --sentinel`) whose config file is these lines, given its port and dir. */
        sentinel?: (port: number, dir: string) => string[];
    } = {},
): Promise<TestRedis> {
    ensureTestPackages();
    if (!fs.existsSync(BIN))
        throw new Error(`${BIN} is missing: scripts/install-test-deps.sh installs Debian's redis-server`);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-redis-"));
    const port = await freeLoopbackPort();
    const password = opts.password ?? `pw-${Math.random().toString(36).slice(2)}-secret`;
    const persistence = opts.aof
        ? ["--appendonly", "yes", "--appendfsync", opts.fsync ?? "always"]
        : ["--appendonly", "no"];
    // masterauth on every node: a primary a failover left behind is made a replica when it comes back.
    const replica = [
        ...(opts.replicaOf ? ["--replicaof", "127.0.0.1", String(opts.replicaOf)] : []),
        "--masterauth",
        password,
    ];
    const args = opts.sentinel
        ? sentinelArgs(opts.sentinel(port, dir), port, dir, password)
        : [
              "--port",
              String(port),
              "--bind",
              "127.0.0.1",
              "--save",
              "",
              ...persistence,
              "--dir",
              dir,
              "--requirepass",
              password,
              "--logfile",
              path.join(dir, "redis.log"),
              ...replica,
          ];
    let child: cp.ChildProcess | undefined;
    const start = async () => {
        child = cp.spawn(BIN, args, { stdio: "ignore" });
        const c = child;
        const exited = new Promise<never>((_, reject) =>
            c.once("exit", (code) =>
                reject(new Error(`redis-server exited with ${code} at start; its log:\n${readLog(dir)}`)),
            ),
        );
        await Promise.race([answersPing(port, password, 10_000), exited]);
        c.removeAllListeners("exit");
    };
    const end = async (signal: NodeJS.Signals) => {
        const c = child;
        if (!c || c.exitCode !== null || c.signalCode !== null) return;
        await new Promise((r) => {
            c.once("exit", r);
            c.kill(signal);
        });
    };
    const kill = () => end("SIGKILL");
    const onExit = () => {
        child?.kill("SIGKILL");
        fs.rmSync(dir, { recursive: true, force: true });
    };
    atExit(onExit);
    await start();
    return {
        port,
        password,
        dir,
        url: `redis://:${password}@127.0.0.1:${port}`,
        start,
        kill,
        stop: () => end("SIGTERM"),
        pid: () => child?.pid,
        async cleanup() {
            live.delete(onExit);
            await kill();
            fs.rmSync(dir, { recursive: true, force: true });
        },
    };
}

/** What the server in `dir` logged so far (its `--logfile`), or undefined before it wrote one. */
export function redisLog(dir: string): string | undefined {
    try {
        return fs.readFileSync(path.join(dir, "redis.log"), "utf8");
    } catch {
        return undefined;
    }
}

function readLog(dir: string): string {
    return redisLog(dir)?.split("\n").slice(-20).join("\n") ?? "(no log)";
}

/** A sentinel's argv: its config file (a sentinel rewrites it, so it must be a file of its own) and `--sentinel`. */
function sentinelArgs(lines: string[], port: number, dir: string, password: string): string[] {
    const conf = path.join(dir, "sentinel.conf");
    const common = [`port ${port}`, "bind 127.0.0.1", `dir ${dir}`, `logfile ${path.join(dir, "redis.log")}`];
    fs.writeFileSync(conf, [...common, `requirepass ${password}`, ...lines, ""].join("\n"));
    return [conf, "--sentinel"];
}

/**
 * The names of the clients connected to the server at `url` now (CLIENT LIST; '' for an unnamed one),
 * this call's own connection left out: how many connections the processes under test hold, and whose.
 */
export async function connectedClients(url: string): Promise<string[]> {
    const { default: Redis } = await import("ioredis");
    const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
        await r.connect();
        const self = String(await r.client("ID"));
        const list = String(await r.client("LIST"));
        return list
            .split("\n")
            .filter((line) => line.trim() !== "" && !line.startsWith(`id=${self} `))
            .map((line) => /(?:^| )name=(\S*)/.exec(line)?.[1] ?? "");
    } finally {
        r.disconnect();
    }
}
