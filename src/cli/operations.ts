import type { Command } from "commander";
import { loadStackConfig, setPoolReplicas } from "../config";
import { EngineError, OperationKind, StackDriver } from "../engine";
import { action, EXIT, GlobalOptions, InterruptedError, projectDir, UsageError } from "./context";
import { preflight } from "./preflight";
import { progressPrinter, proxyTable, summaryLine } from "./render";

/** `create: false` for commands that only read or remove: a mistyped --stack must not create a stack. */
function driverFor(opts: GlobalOptions, create = true): StackDriver {
    return new StackDriver({ workDir: projectDir(opts), stack: opts.stack, create, onNotice: (line) => process.stderr.write(`note: ${line}\n`) });
}

/**
 * Runs `fn` with Ctrl-C meaning "cancel the engine operation safely": the first SIGINT asks the engine to
 * stop (it finishes the steps in flight and saves state), a second one exits at once (the engine dies with
 * us; the next command recovers the stack).
 */
async function cancellable<T>(driver: StackDriver, fn: () => Promise<T>): Promise<T> {
    let asked = false;
    const onSigint = () => {
        if (asked) process.exit(EXIT.interrupted);
        asked = true;
        if (driver.cancel()) process.stderr.write("\ncancelling: the engine finishes what is in flight and saves state (Ctrl-C again to quit now)\n");
    };
    process.on("SIGINT", onSigint);
    try {
        return await fn();
    } finally {
        process.off("SIGINT", onSigint);
    }
}

/** Runs one engine operation with progress, then prints the result (and the proxies after up). */
async function runOperation(kind: OperationKind, opts: GlobalOptions & { refresh?: boolean; quiet?: boolean }): Promise<void> {
    // Validate before the engine starts: a config error names its path and nothing is touched.
    if (kind === "up" || kind === "preview") preflight(loadStackConfig(projectDir(opts), opts.stack));
    const driver = driverFor(opts, kind === "up" || kind === "preview");
    const onProgress = opts.quiet ? undefined : progressPrinter();
    if (!opts.quiet) process.stderr.write(`${kind} stack ${opts.stack} (${projectDir(opts)})\n`);
    let result;
    try {
        result = await cancellable(driver, () => driver[kind]({ onProgress, refresh: opts.refresh }));
    } catch (e) {
        // Interrupted: what runs now is what state says (not the previous run's stack output).
        if (e instanceof EngineError && e.interrupted && kind !== "preview") throw new InterruptedError(e.message, await driver.membersInState());
        throw e;
    }
    const proxies = kind === "up" ? result.proxies : kind === "refresh" ? await driver.proxies() : undefined;
    if (opts.json) process.stdout.write(JSON.stringify({ ok: true, ...result, ...(proxies ? { proxies } : {}) }) + "\n");
    else {
        process.stderr.write(summaryLine(result) + "\n");
        if (proxies) process.stdout.write(proxyTable(proxies));
    }
}

export function registerOperations(program: Command): void {
    program
        .command("up")
        .description("create or update the stack's proxies to match its config (refreshes first, so dead proxies come back)")
        .option("--no-refresh", "skip the refresh before the update")
        .option("-q, --quiet", "no progress output")
        .action(action(async (o, cmd) => runOperation("up", { ...cmd.optsWithGlobals(), ...o })));
    program
        .command("preview")
        .description("show what `up` would change, without changing anything")
        .option("-q, --quiet", "no progress output")
        .action(action(async (o, cmd) => runOperation("preview", { ...cmd.optsWithGlobals(), ...o })));
    program
        .command("refresh")
        .description("reconcile state with what actually runs (marks dead proxies for recreation)")
        .option("-q, --quiet", "no progress output")
        .action(action(async (o, cmd) => runOperation("refresh", { ...cmd.optsWithGlobals(), ...o })));
    program
        .command("destroy")
        .description("remove every proxy of the stack")
        .option("-y, --yes", "confirm: destroy without asking")
        .option("-q, --quiet", "no progress output")
        .action(action(async (o, cmd) => {
            if (!o.yes) throw new UsageError("destroy removes every proxy of the stack; pass --yes to confirm");
            await runOperation("destroy", { ...cmd.optsWithGlobals(), ...o });
        }));
    program
        .command("outputs")
        .description("print the stack output `proxies`")
        .action(action(async (_o, cmd) => {
            const opts = cmd.optsWithGlobals() as GlobalOptions;
            const proxies = await driverFor(opts, false).proxies();
            process.stdout.write(opts.json ? JSON.stringify(proxies) + "\n" : proxyTable(proxies));
        }));
    program
        .command("scale <pool> <replicas>")
        .description("set a pool's desired replicas in the stack file, then run `up`")
        .option("--no-up", "only write the stack file")
        .option("-q, --quiet", "no progress output")
        .action(action(async (pool: string, replicas: string, o, cmd) => {
            const opts = { ...cmd.optsWithGlobals(), ...o };
            const dir = projectDir(opts);
            // Validates before writing: every bad input fails here, with the stack file untouched.
            const { previous, replicas: n } = setPoolReplicas(dir, opts.stack, pool, replicas);
            if (!opts.quiet) process.stderr.write(`pool ${pool}: replicas ${previous} -> ${n}\n`);
            if (o.up) await runOperation("up", opts);
            else if (opts.json) process.stdout.write(JSON.stringify({ ok: true, pool, previous, replicas: n }) + "\n");
        }));
}
