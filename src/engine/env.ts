import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

/** Where egress keeps machine-local things: the Pulumi CLI, the file backend, the passphrase, proxy state. */
export interface EngineHome {
    /** `<root>/.egress` unless EGRESS_HOME says otherwise. */
    dir: string;
    binDir: string;
    backendDir: string;
    passphraseFile: string;
    pulumiHome: string;
    runDir: string;
}

/** The directory holding package.json and node_modules of egress itself (where the code runs from). */
export const PACKAGE_ROOT = path.resolve(__dirname, "..", "..", "..");

/** egress's own version, from the package.json it runs from. */
export function packageVersion(): string {
    return (JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, "package.json"), "utf8")) as { version: string })
        .version;
}

export function engineHome(env: NodeJS.ProcessEnv = process.env): EngineHome {
    const dir = env.EGRESS_HOME ? path.resolve(env.EGRESS_HOME) : path.join(PACKAGE_ROOT, ".egress");
    return {
        dir,
        binDir: path.join(dir, "bin"),
        backendDir: path.join(dir, "backend"),
        passphraseFile: path.join(dir, "passphrase"),
        pulumiHome: path.join(dir, "pulumi-home"),
        runDir: path.join(dir, "run"),
    };
}

/**
 * Environment for every CLI invocation: file backend, passphrase secrets, no update checks. Anything the
 * user already set (PULUMI_BACKEND_URL, PULUMI_CONFIG_PASSPHRASE[_FILE]) wins. A local passphrase file is
 * generated on first use so the `dev` stack works out of the box.
 *
 * Automatic plugin acquisition is left alone: the GCP and Kubernetes providers are downloaded on first use
 * by a user with internet access. Machines without it (tests, CI) set
 * PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true themselves; it reaches the engine through the child
 * allow-list (child-env.ts passes PULUMI_*), and `egress doctor` prints the install commands.
 */
export function engineEnv(home: EngineHome, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
    fs.mkdirSync(home.backendDir, { recursive: true });
    fs.mkdirSync(home.pulumiHome, { recursive: true });
    const out: Record<string, string> = {
        PULUMI_SKIP_UPDATE_CHECK: "true",
        PULUMI_CREDENTIAL_STORE: env.PULUMI_CREDENTIAL_STORE ?? "plaintext",
        PULUMI_HOME: env.PULUMI_HOME ?? home.pulumiHome,
        PULUMI_BACKEND_URL: env.PULUMI_BACKEND_URL ?? `file://${home.backendDir}`,
        // The engine finds the dynamic-provider plugin next to `pulumi`; the plugin and the providers it
        // deserializes resolve egress's node_modules from here even when the work dir is elsewhere.
        PATH: `${home.binDir}${path.delimiter}${env.PATH ?? ""}`,
        NODE_PATH: [path.join(PACKAGE_ROOT, "node_modules"), env.NODE_PATH].filter(Boolean).join(path.delimiter),
        // A stack file that lost its salt (re-made from its seed, or an old clone's tracked dev file
        // removed on pull) takes the salt its state holds instead of a new one that opens nothing there.
        PULUMI_FALLBACK_TO_STATE_SECRETS_MANAGER: env.PULUMI_FALLBACK_TO_STATE_SECRETS_MANAGER ?? "true",
        // Bound the backend's growth (history-prune.ts prunes the rest): a backup is one more full
        // checkpoint per update, and the stack's `.bak` already keeps the previous one.
        PULUMI_DIY_BACKEND_DISABLE_CHECKPOINT_BACKUPS: env.PULUMI_DIY_BACKEND_DISABLE_CHECKPOINT_BACKUPS ?? "true",
    };
    // Compressed checkpoints where egress reads state through the engine anyway (a database, an object
    // store); a file backend stays plain JSON, which its fast path and people read (docs/decisions/0049-state-backends.md).
    const url = out.PULUMI_BACKEND_URL;
    if (
        !url.startsWith("file://") &&
        env.PULUMI_DIY_BACKEND_GZIP === undefined &&
        env.PULUMI_DIY_BACKEND_ZSTD === undefined
    )
        out.PULUMI_DIY_BACKEND_GZIP = "true";
    if (!env.PULUMI_CONFIG_PASSPHRASE && !env.PULUMI_CONFIG_PASSPHRASE_FILE) {
        ensurePassphrase(home.passphraseFile);
        out.PULUMI_CONFIG_PASSPHRASE_FILE = home.passphraseFile;
    }
    return out;
}

function ensurePassphrase(file: string): void {
    if (fs.existsSync(file)) return;
    fs.mkdirSync(path.dirname(file), { recursive: true });
    // wx: never overwrite a passphrase another process just generated (it would orphan its secrets).
    try {
        fs.writeFileSync(file, crypto.randomBytes(24).toString("base64url") + "\n", { mode: 0o600, flag: "wx" });
    } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
}
