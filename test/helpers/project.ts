import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import YAML from "yaml";
import { engineHome, FleetDriver, PACKAGE_ROOT, StackDriver } from "../../src/engine";

/**
 * Tests run without internet: the engine must not try to download provider plugins (egress leaves
 * acquisition on for users, see src/engine/env.ts). scripts/test.sh exports the same for every suite; this
 * covers a test file run on its own.
 */
export const OFFLINE_ENV = { PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true" } as const;

/**
 * A throwaway Pulumi project for one test: its own Pulumi.yaml, stacks/, file backend, passphrase and
 * local-proxy state dir, so tests never touch the developer's `dev` stack. Uses the real CLI that
 * `npm run setup` built into .egress/bin, and fails loudly when it is missing.
 */
export function tempProject(
    stack: string,
    config: object,
): { dir: string; driver: StackDriver; env: Record<string, string>; writeConfig(c: object): void; cleanup(): void } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-test-"));
    const home = engineHome();
    if (!fs.existsSync(path.join(home.binDir, "pulumi")))
        throw new Error(`the Pulumi CLI is missing at ${home.binDir}/pulumi: run \`npm run setup\``);
    // Same project as egress's own, minus `main` (the CLI checks it exists; inline runs don't use it).
    const settings = YAML.parse(fs.readFileSync(path.join(PACKAGE_ROOT, "Pulumi.yaml"), "utf8"));
    delete settings.main;
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), YAML.stringify(settings));
    fs.mkdirSync(path.join(dir, "stacks"));
    const stackFile = path.join(dir, "stacks", `Pulumi.${stack}.yaml`);
    const writeConfig = (c: object) => writeStackConfig(stackFile, c);
    writeConfig(config);
    const env = {
        ...OFFLINE_ENV,
        PULUMI_BACKEND_URL: `file://${path.join(dir, "backend")}`,
        PULUMI_CONFIG_PASSPHRASE: "egress-test-passphrase",
    };
    fs.mkdirSync(path.join(dir, "backend"));
    const driver: StackDriver = new FleetDriver({
        workDir: dir,
        stack,
        home: { ...home, runDir: path.join(dir, "run") },
        env,
    });
    return { dir, driver, env, writeConfig, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** pids of processes whose argv mentions `text` (a run dir or state dir: how tests find their proxies). */
export function pidsMentioning(text: string): number[] {
    return fs
        .readdirSync("/proc")
        .filter((d) => /^\d+$/.test(d))
        .filter((pid) => {
            try {
                return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(text);
            } catch {
                return false;
            }
        })
        .map(Number);
}

/**
 * Writes a stack file's `config` as a careful operator edits it: what Pulumi keeps there (the passphrase's
 * `encryptionsalt`) kept, and the file swapped in whole. A file without its salt was rewritten by the
 * engine at its next run, in place, and a service reading the file then (GET /v1/pools) read half of it.
 */
export function writeStackConfig(stackFile: string, config: object): void {
    const before = fs.existsSync(stackFile) ? (YAML.parse(fs.readFileSync(stackFile, "utf8")) ?? {}) : {};
    fs.writeFileSync(`${stackFile}.tmp`, YAML.stringify({ ...before, config }));
    fs.renameSync(`${stackFile}.tmp`, stackFile);
}
