/**
 * squid as the rotating gateway an infra team would build instead of ours: a parent-chaining proxy
 * that sends every request (and CONNECT) round-robin to the same local members the gateway uses,
 * never direct, caching nothing. Started by bench/gateway.ts per concurrency, stopped after its rows.
 * Debian's squid (`apt-get install squid`; scripts/install-test-deps.sh installs it); missing: it throws.
 */
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import { freeLoopbackPort } from "../../test/helpers/net";

export const SQUID = "/usr/sbin/squid";

/** The whole squid.conf: listen on 127.0.0.1:`port`, `members` as round-robin parents, state in `dir`. */
export function squidParentConf(o: { port: number; members: readonly string[]; dir: string }): string {
    const peers = o.members.map((url, i) => {
        const u = new URL(url);
        // name=: several parents on one host need their own names.
        return `cache_peer ${u.hostname} parent ${u.port} 0 no-query no-digest round-robin name=member${i}`;
    });
    return [
        `http_port 127.0.0.1:${o.port}`,
        ...peers,
        "never_direct allow all",
        "http_access allow localhost",
        "http_access deny all",
        "cache deny all",
        `pid_filename ${path.join(o.dir, "squid.pid")}`,
        `cache_log ${path.join(o.dir, "cache.log")}`,
        `access_log stdio:${path.join(o.dir, "access.log")}`,
        `coredump_dir ${o.dir}`,
        "visible_hostname egress-bench",
        "pinger_enable off",
        "shutdown_lifetime 0 seconds",
        "",
    ].join("\n");
}

export interface BenchSquid {
    port: number;
    stop(): Promise<void>;
}

/** squid over `members`, answering GET `probeUrl` through them; throws with its log when it does not start. */
export async function startSquid(members: readonly string[], probeUrl: string): Promise<BenchSquid> {
    if (!fs.existsSync(SQUID))
        throw new Error(`${SQUID} is missing: apt-get install squid (scripts/install-test-deps.sh installs it)`);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-bench-squid-"));
    const port = await freeLoopbackPort();
    const conf = path.join(dir, "squid.conf");
    fs.writeFileSync(conf, squidParentConf({ port, members, dir }));
    // As root squid drops to its effective user (Debian: proxy), which must write the logs and pid there.
    if (process.getuid?.() === 0) {
        const uid = Number(cp.execFileSync("id", ["-u", "proxy"], { encoding: "utf8" }).trim());
        const gid = Number(cp.execFileSync("id", ["-g", "proxy"], { encoding: "utf8" }).trim());
        fs.chownSync(dir, uid, gid);
    }
    const child = cp.spawn(SQUID, ["-N", "-f", conf], { stdio: ["ignore", "pipe", "pipe"] });
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
                child.kill("SIGTERM"); // shutdown_lifetime 0: it exits at once
                setTimeout(killNow, 3000).unref();
            });
        fs.rmSync(dir, { recursive: true, force: true });
    };
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && child.exitCode === null) {
        if ((await probe(port, probeUrl)) === 200) return { port, stop };
        await new Promise((r) => setTimeout(r, 100));
    }
    const log = fs.existsSync(path.join(dir, "cache.log")) ? fs.readFileSync(path.join(dir, "cache.log"), "utf8") : "";
    await stop();
    throw new Error(`squid did not start (exit ${child.exitCode}): ${out}\n${log.split("\n").slice(-15).join("\n")}`);
}

/** One GET of `url` through the proxy on `port`: its status, 0 without an answer. */
function probe(port: number, url: string): Promise<number> {
    return new Promise((resolve) => {
        const req = http.request({ host: "127.0.0.1", port, path: url, agent: false }, (res) => {
            res.resume().on("end", () => resolve(res.statusCode!));
        });
        req.setTimeout(1000, () => req.destroy());
        req.on("error", () => resolve(0)).end();
    });
}
