import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import type { PulumiCommand } from "@pulumi/pulumi/automation";
import { childEnv } from "./child-env";
import { MARKER_VAR } from "./leftovers";

/** The Pulumi CLI with the environment, start and stop of its processes under our control. */
export type EngineCommand = PulumiCommand;

/**
 * Wraps `pulumi` so every CLI process the automation API starts runs under `egress-supervise`
 * (tools/supervise): the engine and its plugins die with this process (kernel parent-death signal plus
 * a child subreaper), carry our run marker (so a restart can find leftovers of a dead run, see
 * leftovers.ts), and get an allow-listed environment (child-env.ts) instead of ours.
 *
 * The automation API spawns the CLI through an internal `run` method and merges `process.env` into the
 * child's environment with no way to opt out, so the one seam is replacing `run` on the command object.
 * Its signature is stable across 3.x (args, cwd, env, onOutput, onError, signal).
 */
export function supervise(real: PulumiCommand, supervisor: string, marker: string): EngineCommand {
    if (!fs.existsSync(supervisor)) throw new Error(`${supervisor} is missing: run \`npm run setup\``);
    const cmd = Object.create(real) as PulumiCommand & { run: RunFn };
    cmd.run = (args, cwd, additionalEnv, onOutput, onError, signal) => {
        if (!args.includes("--non-interactive")) args.push("--non-interactive");
        const env: Record<string, string> = {
            ...childEnv(process.env),
            ...additionalEnv,
            // The bundled plugins (the dynamic-provider host) live next to the CLI.
            PATH: `${path.dirname(real.command)}${path.delimiter}${additionalEnv.PATH ?? process.env.PATH ?? ""}`,
            PULUMI_AUTOMATION_API: "true",
            [MARKER_VAR]: marker,
            EGRESS_SUPERVISE_PARENT: String(process.pid),
        };
        return runSupervised(supervisor, [real.command, ...args], cwd, env, onOutput, onError, signal);
    };
    return cmd;
}

/** The supervisors this process started that have not exited (terminateEngines). */
const live = new Set<cp.ChildProcess>();

/**
 * Ends every engine command this process runs now, without the engine's own shutdown: SIGUSR1 to each
 * supervisor, which SIGKILLs the CLI and sweeps its plugins (tools/supervise), as when this process dies. For a leader that lost
 * the stack's lock and whose engine did not stop on a cancel in time (a step stuck in a provider): a
 * leader on another host must be able to tell when it is gone. State keeps what the engine wrote;
 * recovery finishes the pending operations it left. Returns how many were signalled.
 */
export function terminateEngines(): number {
    let n = 0;
    for (const child of live)
        try {
            if (child.pid && child.exitCode === null && child.signalCode === null) {
                process.kill(child.pid, "SIGUSR1");
                n++;
            }
        } catch {
            /* it exited meanwhile */
        }
    return n;
}

type RunFn = (
    args: string[],
    cwd: string,
    env: Record<string, string>,
    onOutput?: (s: string) => void,
    onError?: (s: string) => void,
    signal?: AbortSignal,
) => Promise<CommandResult>;
type CommandResult = { stdout: string; stderr: string; code: number; err?: Error };

function runSupervised(
    supervisor: string,
    argv: string[],
    cwd: string,
    env: Record<string, string>,
    onOutput?: (s: string) => void,
    onError?: (s: string) => void,
    signal?: AbortSignal,
): Promise<CommandResult> {
    // The automation API's own result and error types, so its error classification (ConcurrentUpdateError,
    // StackNotFoundError, ...) keeps working.
    const { CommandResult } = require("@pulumi/pulumi/automation/cmd");
    const { createCommandError } = require("@pulumi/pulumi/automation/errors");
    return new Promise((resolve, reject) => {
        // Own process group: a terminal's Ctrl-C reaches only us, and we pass on exactly one SIGINT (pulumi
        // treats a second one as "abort without saving state").
        const child = cp.spawn(supervisor, ["--", ...argv], {
            cwd,
            env,
            detached: true,
            stdio: ["ignore", "pipe", "pipe"],
        });
        live.add(child);
        let stdout = "",
            stderr = "";
        child.stdout.setEncoding("utf8").on("data", (d: string) => {
            stdout += d;
            onOutput?.(d);
        });
        child.stderr.setEncoding("utf8").on("data", (d: string) => {
            stderr += d;
            onError?.(d);
        });
        const cancel = () => {
            try {
                // To the group (supervisor + pulumi, plugins have their own groups): the supervisor does not
                // forward SIGINT (in a terminal the group already got it), so this is pulumi's only one.
                if (child.pid && child.exitCode === null) process.kill(-child.pid, "SIGINT");
            } catch {
                /* it exited meanwhile: nothing left to cancel */
            }
        };
        signal?.addEventListener("abort", cancel, { once: true });
        if (signal?.aborted) cancel(); // cancelled before this command started

        child.once("error", (e) => {
            live.delete(child);
            reject(createCommandError(new CommandResult("", e.message, -2, e)));
        });
        child.once("close", (code, sig) => {
            live.delete(child);
            signal?.removeEventListener("abort", cancel);
            const result = new CommandResult(stdout, stderr, code ?? (sig ? 128 : -2));
            if (code === 0) resolve(result);
            else reject(createCommandError(result));
        });
    });
}
