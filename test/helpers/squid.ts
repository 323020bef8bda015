/**
 * A throwaway squid (Debian's, `apt-get install squid`; scripts/install-test-deps.sh installs it) in the
 * foreground, its pid, logs and core dumps in one temp dir, for the tests that run a generated config for
 * real and for bench/gateway's squid row. Fails loudly (never skips) when squid is missing or does not
 * start. Mirrors redis.ts and haproxy.ts.
 */
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

export const SQUID = "/usr/sbin/squid";

/** The binary; throws, naming the package, when it is not there. */
export function squidBin(): string {
    if (!fs.existsSync(SQUID))
        throw new Error(`${SQUID} is missing: apt-get install squid (scripts/install-test-deps.sh installs it)`);
    return SQUID;
}

/** What keeps squid's state in `dir` instead of the system paths, and lets it stop at once. */
export function squidStateLines(dir: string): string[] {
    return [
        `pid_filename ${path.join(dir, "squid.pid")}`,
        `cache_log ${path.join(dir, "cache.log")}`,
        `access_log stdio:${path.join(dir, "access.log")}`,
        `coredump_dir ${dir}`,
        "visible_hostname egress-test",
        "pinger_enable off",
        "shutdown_lifetime 0 seconds",
    ];
}

/**
 * Runs `squid -N` with `dir`/squid.conf (written by the caller, with squidStateLines(dir)) until `ready()`
 * says it serves; `stop` kills it and removes `dir`. Throws with its output and log when it does not start.
 */
export async function startSquidIn(
    dir: string,
    ready: () => Promise<boolean>,
): Promise<{ stop(): Promise<void>; pid: number }> {
    const bin = squidBin();
    // As root squid drops to its effective user (Debian: proxy), which must read the dir and write there.
    if (process.getuid?.() === 0) {
        const uid = Number(cp.execFileSync("id", ["-u", "proxy"], { encoding: "utf8" }).trim());
        const gid = Number(cp.execFileSync("id", ["-g", "proxy"], { encoding: "utf8" }).trim());
        fs.chmodSync(dir, 0o755);
        for (const f of fs.readdirSync(dir)) fs.chownSync(path.join(dir, f), uid, gid);
        fs.chownSync(dir, uid, gid);
    }
    const child = cp.spawn(bin, ["-N", "-f", path.join(dir, "squid.conf")], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d) => (out += d));
    const killNow = () => child.exitCode === null && child.signalCode === null && child.kill("SIGKILL");
    process.once("exit", killNow);
    const stop = async () => {
        process.removeListener("exit", killNow);
        if (child.exitCode === null && child.signalCode === null)
            await new Promise((r) => {
                child.once("exit", r);
                killNow();
            });
        fs.rmSync(dir, { recursive: true, force: true });
    };
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && child.exitCode === null) {
        if (await ready().catch(() => false)) return { stop, pid: child.pid! };
        await new Promise((r) => setTimeout(r, 100));
    }
    const logFile = path.join(dir, "cache.log");
    const log = fs.existsSync(logFile) ? fs.readFileSync(logFile, "utf8") : "";
    await stop();
    throw new Error(`squid did not start (exit ${child.exitCode}): ${out}\n${log.split("\n").slice(-15).join("\n")}`);
}
