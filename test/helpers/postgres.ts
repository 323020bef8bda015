/**
 * A throwaway PostgreSQL 15 for one test: its own cluster (initdb) in a temp dir, on a free loopback
 * port, password auth (so tests can look for the password where it must not be). `postgres` refuses to
 * run as root, so as root it runs as the `postgres` user (runuser). `kill` and `start` again keep the
 * port and the data, as a database restart would. Killed when the test process exits. Fails loudly
 * (never skips) when PostgreSQL is missing or does not start.
 */
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ensureTestPackages } from "./deps";
import { freeLoopbackPort } from "./net";

export interface TestPostgres {
    port: number;
    password: string;
    /** postgres://egress:<password>@127.0.0.1:<port>/postgres?sslmode=disable */
    url: string;
    dir: string;
    /** Runs SQL with psql (as the cluster's superuser) and returns its unaligned output. */
    sql(query: string): string;
    /** Keys of Pulumi's state rows under `.pulumi/<what>/` (`locks`, `stacks`, `history`, …), sorted. */
    keys(what: string): string[];
    /** Starts it again on the same port and data (after `kill`). */
    start(): Promise<void>;
    /** SIGKILL of the postmaster: the bad day, not a clean shutdown. */
    kill(): Promise<void>;
    /** Kills it and removes its dir. */
    cleanup(): Promise<void>;
}

export const PG_BIN = "/usr/lib/postgresql/15/bin";
const USER = "egress";

/** argv that runs a PostgreSQL binary as a user it accepts: root hands it to `postgres`. */
function asPostgresUser(bin: string, args: string[]): [string, string[]] {
    const full = path.join(PG_BIN, bin);
    return process.getuid?.() === 0 ? ["runuser", ["-u", "postgres", "--", full, ...args]] : [full, args];
}

function run(bin: string, args: string[], o: { input?: string; password?: string } = {}): string {
    const [cmd, argv] = asPostgresUser(bin, args);
    const env = o.password ? { ...process.env, PGPASSWORD: o.password } : process.env;
    const r = cp.spawnSync(cmd, argv, { encoding: "utf8", input: o.input, env, timeout: 60_000 });
    if (r.status !== 0)
        throw new Error(`${bin} ${args.join(" ")} failed (${r.status ?? r.signal ?? r.error}): ${r.stderr}`);
    return r.stdout;
}

export async function startPostgres(): Promise<TestPostgres> {
    ensureTestPackages();
    if (!fs.existsSync(path.join(PG_BIN, "postgres")))
        throw new Error(`${PG_BIN}/postgres is missing: scripts/install-test-deps.sh installs Debian's postgresql-15`);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-pg-"));
    const data = path.join(dir, "data");
    const password = `pw-${Math.random().toString(36).slice(2)}-secret`;
    fs.writeFileSync(path.join(dir, "pwfile"), password + "\n", { mode: 0o600 });
    if (process.getuid?.() === 0) cp.execFileSync("chown", ["-R", "postgres:postgres", dir]);
    run("initdb", [
        "-D",
        data,
        "-U",
        USER,
        "--auth=scram-sha-256",
        `--pwfile=${path.join(dir, "pwfile")}`,
        "-E",
        "UTF8",
    ]);
    const port = await freeLoopbackPort();
    let child: cp.ChildProcess | undefined;
    const postmasterPid = (): number | undefined => {
        try {
            return Number(fs.readFileSync(path.join(data, "postmaster.pid"), "utf8").split("\n")[0]) || undefined;
        } catch {
            return undefined;
        }
    };
    const start = async () => {
        const [cmd, argv] = asPostgresUser("postgres", [
            "-D",
            data,
            "-p",
            String(port),
            "-k",
            dir,
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off", // a test cluster: speed over durability across a host crash
            "-c",
            `log_directory=${dir}`,
            "-c",
            "logging_collector=off",
        ]);
        const log = fs.openSync(path.join(dir, "postgres.log"), "a");
        child = cp.spawn(cmd, argv, { stdio: ["ignore", log, log] });
        fs.closeSync(log);
        const c = child;
        const deadline = Date.now() + 20_000;
        for (;;) {
            if (c.exitCode !== null)
                throw new Error(`postgres exited with ${c.exitCode} at start; its log:\n${readLog(dir)}`);
            const ready = cp.spawnSync(path.join(PG_BIN, "pg_isready"), ["-h", "127.0.0.1", "-p", String(port)]);
            if (ready.status === 0) return;
            if (Date.now() > deadline)
                throw new Error(`postgres on 127.0.0.1:${port} was not ready within 20 s; its log:\n${readLog(dir)}`);
            await new Promise((r) => setTimeout(r, 100));
        }
    };
    const kill = async () => {
        const pid = postmasterPid();
        if (pid) {
            try {
                process.kill(pid, "SIGKILL");
            } catch {
                /* already gone */
            }
        }
        const c = child;
        if (c && c.exitCode === null && c.signalCode === null) await new Promise((r) => c.once("exit", r));
        // Its backends notice the postmaster's death and exit; a restart waits for them (pid file check).
        fs.rmSync(path.join(data, "postmaster.pid"), { force: true });
    };
    const onExit = () => {
        const pid = postmasterPid();
        if (pid)
            try {
                process.kill(pid, "SIGKILL");
            } catch {
                /* already gone */
            }
        fs.rmSync(dir, { recursive: true, force: true });
    };
    process.once("exit", onExit);
    await start();
    const sql = (query: string) =>
        run("psql", ["-h", dir, "-p", String(port), "-U", USER, "-d", "postgres", "-XAtq", "-v", "ON_ERROR_STOP=1"], {
            input: query,
            password,
        });
    return {
        port,
        password,
        dir,
        url: `postgres://${USER}:${password}@127.0.0.1:${port}/postgres?sslmode=disable`,
        sql,
        // Rows are keyed by the file backend's paths under the database name (docs/engine.md).
        keys: (what) =>
            sql(`SELECT key FROM pulumi_state WHERE key LIKE 'postgres/.pulumi/${what}/%' ORDER BY key`)
                .split("\n")
                .filter(Boolean),
        start,
        kill,
        async cleanup() {
            process.off("exit", onExit);
            await kill();
            fs.rmSync(dir, { recursive: true, force: true });
        },
    };
}

function readLog(dir: string): string {
    try {
        return fs.readFileSync(path.join(dir, "postgres.log"), "utf8").split("\n").slice(-20).join("\n");
    } catch {
        return "(no log)";
    }
}
