/**
 * A throwaway project for tests that run egress as separate processes (processes.ts): its own
 * EGRESS_HOME with the machine's engine binaries linked in, a file backend, a stack file the test can
 * edit, and an environment that isolates every egress process it starts (service, CLI, engine) from the
 * developer's. Its cleanup kills whatever still runs from it.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import YAML from "yaml";
import { engineHome, PACKAGE_ROOT } from "../../src/engine";
import { OFFLINE_ENV, pidsMentioning, writeStackConfig } from "./project";

export const ADMIN_TOKEN = "tok-crash-admin-0123456789abcdef";

export interface ProcProject {
    dir: string;
    stack: string;
    home: string;
    /** Where the stack's local proxies keep their ready files. */
    stateDir: string;
    backendDir: string;
    env: Record<string, string>;
    setReplicas(pool: string, n: number): void;
    /** The count the stack file holds for `pool` now. */
    replicas(pool: string): number;
    /**
     * The host name its egress processes see (their own UTS namespace, processes.ts), as on another
     * machine; undefined runs them as this host.
     */
    host?: string;
    /** Replaces the stack file's config (a stack file edit: a new port, image …). */
    writeConfig(config: object): void;
    cleanup(): void;
}

/** A project whose every egress process (service, CLI, engine) is isolated from the developer's. */
export function procProject(
    stack: string,
    config: object,
    extraEnv: Record<string, string> = {},
    opts: { host?: string } = {},
): ProcProject {
    const bin = engineHome().binDir;
    for (const b of ["pulumi", "egress-supervise"])
        if (!fs.existsSync(path.join(bin, b))) throw new Error(`${bin}/${b} is missing: run \`npm run setup\``);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-proc-"));
    const home = path.join(dir, ".egress");
    fs.mkdirSync(home);
    fs.symlinkSync(bin, path.join(home, "bin"));
    const settings = YAML.parse(fs.readFileSync(path.join(PACKAGE_ROOT, "Pulumi.yaml"), "utf8"));
    delete settings.main;
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), YAML.stringify(settings));
    fs.mkdirSync(path.join(dir, "stacks"));
    const file = path.join(dir, "stacks", `Pulumi.${stack}.yaml`);
    fs.writeFileSync(file, YAML.stringify({ config }));
    const backendDir = path.join(dir, "backend");
    fs.mkdirSync(backendDir);
    const env = {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: process.env.HOME ?? dir,
        EGRESS_HOME: home,
        PULUMI_BACKEND_URL: `file://${backendDir}`,
        PULUMI_CONFIG_PASSPHRASE: "egress-test-passphrase",
        EGRESS_TOKENS: `admin:admin:${ADMIN_TOKEN}`,
        ...OFFLINE_ENV,
        ...extraEnv,
    };
    return {
        dir,
        stack,
        home,
        backendDir,
        env,
        host: opts.host,
        stateDir: path.join(home, "run", "local", stack),
        setReplicas(pool, n) {
            const doc = YAML.parse(fs.readFileSync(file, "utf8"));
            doc.config["egress:pools"].find((p: { name: string }) => p.name === pool).replicas = n;
            writeStackConfig(file, doc.config);
        },
        replicas: (pool) =>
            YAML.parse(fs.readFileSync(file, "utf8")).config["egress:pools"].find(
                (p: { name: string }) => p.name === pool,
            ).replicas,
        writeConfig: (config) => writeStackConfig(file, config),
        cleanup: () => {
            // A test that failed before its destroy (or whose destroy failed) must not leave its proxies,
            // services or engines running on the machine for the next test file: they are said and killed.
            const left = pidsMentioning(dir).filter((pid) => pid !== process.pid);
            if (left.length)
                process.stderr.write(
                    `cleanup of ${dir}: killing ${left.length} leftover process(es): ${left.map(describePid).join("; ")}\n`,
                );
            for (const pid of left)
                try {
                    process.kill(pid, "SIGKILL");
                } catch {
                    // already gone
                }
            fs.rmSync(dir, { recursive: true, force: true });
        },
    };
}

/** `pid: command line` (the first 160 characters), for the cleanup's report of what a test left running. */
function describePid(pid: number): string {
    try {
        return `${pid}: ${fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").slice(0, 160)}`;
    } catch {
        return `${pid}: (gone)`;
    }
}
