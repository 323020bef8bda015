#!/usr/bin/env node
/**
 * `egress` — the command line. Every command takes `--stack` (default `dev`, or $EGRESS_STACK) and
 * `--json`. Exit codes: 0 ok, 1 operation failed, 2 invalid input or config, 3 missing prerequisite, 4 lost
 * the stack's lock in the store mid-run (its engine run stopped), 75 the Pulumi backend or the store is unreachable
 * (retry), 130 cancelled with Ctrl-C.
 */
// First: the SDK's closure serializer loads when it first serializes, not with the SDK (lazy-closure.ts).
import "./engine/lazy-closure";
import { Command } from "commander";
import { packageVersion } from "./engine";
import { GlobalOptions, projectDir, reportError } from "./cli/context";
import { ensureStackFile } from "./config";
import { createLogger } from "./log/logger";
import { registerOperations } from "./cli/operations";
import { registerScale } from "./cli/scale";
import { registerDoctor } from "./cli/doctor";
import { registerGc } from "./cli/gc";
import { registerServe } from "./cli/serve";
import { registerForget } from "./cli/forget";

export function buildCli(): Command {
    const program = new Command("egress")
        .description("Pools of HTTP(S) egress proxies for web crawlers, provisioned with Pulumi.")
        .version(packageVersion(), "-V, --version", "print egress's version")
        .option("-s, --stack <name>", "stack to operate on", process.env.EGRESS_STACK ?? "dev")
        .option(
            "-C, --cwd <dir>",
            "Pulumi project directory (default: the current one if it has Pulumi.yaml, else egress's own)",
        )
        .option("--json", "machine-readable output on stdout")
        .option(
            "--backend <url>",
            "Pulumi backend holding the stack's state: file://<dir>, postgres://user:pass@host/db, s3://, gs:// (default $PULUMI_BACKEND_URL, else .egress/backend)",
        )
        .option(
            "--lock-wait <seconds>",
            "how long to wait while another egress process changes the stack (default 120, or $EGRESS_LOCK_WAIT)",
        )
        .showHelpAfterError()
        .addHelpText(
            "after",
            "\nExamples:\n  egress up                      # bring the dev stack to its config\n  egress scale dev 5             # set pool `dev` to 5 members and apply\n  egress outputs --json | jq '.proxies[].url'\n  egress destroy --yes\n\nExit codes: 0 ok, 1 failed, 2 invalid input or config, 3 missing prerequisite, 4 lost the stack's\nlock in the store to another holder mid-run (the engine run was stopped), 75 the backend or the store is\nunreachable (retry), 130 cancelled with Ctrl-C.\n",
        );
    program.exitOverride((err) => {
        // Unknown commands/options are usage errors (2); --help and --version exit 0.
        process.exit(err.exitCode === 0 ? 0 : 2);
    });
    // A stack that ships as a seed (stacks/seeds/dev.yaml) gets its machine-local file before any command
    // reads it. `serve` writes only JSON lines, so its note is one.
    program.hook("preAction", (_root, cmd) => {
        const opts = cmd.optsWithGlobals() as GlobalOptions;
        // The engine, the state readers and `serve` all take the backend from here (src/engine/backend.ts).
        if (opts.backend) process.env.PULUMI_BACKEND_URL = opts.backend;
        const note = ensureStackFile(projectDir(opts), opts.stack);
        if (!note) return;
        if (cmd.name() === "serve") createLogger().info({ stack: opts.stack }, note);
        else if (!opts.json) process.stderr.write(`note: ${note}\n`);
    });
    registerOperations(program);
    registerScale(program);
    registerDoctor(program);
    registerGc(program);
    registerServe(program);
    registerForget(program);
    return program;
}

/**
 * Runs the CLI: the one entry point for `node dist/src/cli.js` and `bin/egress`. Command actions report
 * their own errors (cli/context.ts); anything that escapes them is reported the same way, never as a
 * stack trace from an unhandled rejection.
 */
export async function main(argv: string[] = process.argv): Promise<void> {
    try {
        await buildCli().parseAsync(argv);
    } catch (e) {
        process.exitCode = reportError(e, argv.includes("--json"));
    }
}

if (require.main === module) void main();
