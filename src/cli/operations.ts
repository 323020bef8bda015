import type { Command } from "commander";
import type { ProxyMember } from "../model";
import { configFingerprint, loadStackConfig } from "../config";
import { EngineError, FleetDriver, OperationKind, OperationResult, ProgressEvent, StackDriver } from "../engine";
import { action, EXIT, GlobalOptions, InterruptedError, projectDir, UsageError } from "./context";
import { HEALTHY_TIMEOUT_MS } from "../fleet-ops/healthy";
import { preflight } from "./preflight";
import { type RolledPool, rollUp } from "./rolling";
import { credentialsTable, progressPrinter, proxyTable, summaryLine } from "./render";
import { exitReleasing, withWriterLock } from "./writer";
import { storeOption } from "./store-lock";
import { guarded, lockLoss, lockLossSignal } from "./lock-loss";

export type EngineRunOptions = GlobalOptions & {
    refresh?: boolean;
    quiet?: boolean;
    allAtOnce?: boolean;
    /** `up` only: roll an update that replaces members, maxSurge at a time (rolling.ts). */
    roll?: boolean;
    /** `up --check-url`: probed through new members during a roll (default: a loopback echo). */
    checkUrl?: string;
    /** `up --health-timeout` (seconds) */
    healthTimeout?: string;
    /**
     * `up` of a count change alone (`egress scale`): the members it adds and removes, targeted and not
     * refreshed, as the service runs a scale (countTargets), so it costs the same at any fleet size.
     */
    counts?: Record<string, number>;
};

/** `create: false` for commands that only read or remove: a mistyped --stack must not create a stack. */
function driverFor(opts: GlobalOptions, create = true): StackDriver {
    return guarded(
        new FleetDriver({
            workDir: projectDir(opts),
            stack: opts.stack,
            create,
            onNotice: (line) => process.stderr.write(`note: ${line}\n`),
        }),
    );
}

/**
 * Runs `fn` with Ctrl-C meaning "cancel the engine operation safely": the first SIGINT asks the engine to
 * stop (it finishes the steps in flight and saves state) and aborts `stop`, a second one exits at once
 * (the engine dies with us; the next command recovers the stack). Once `fn` called `rolling()`, a first
 * Ctrl-C between engine runs does not exit either: the roll starts no new step and removes its surge.
 */
async function cancellable<T>(
    driver: StackDriver,
    fn: (stop: AbortSignal, rolling: () => void) => Promise<T>,
): Promise<T> {
    let asked = false;
    let roll = false;
    const stop = new AbortController();
    const onSigint = () => {
        // Either way the stack's lock in the store is given up first, so a replica need not wait out its TTL.
        if (asked) return void exitReleasing(EXIT.interrupted);
        asked = true;
        stop.abort(
            new EngineError(
                "up",
                "cancelled on request (Ctrl-C); a rolling change removed its surge, members not yet replaced keep their old config",
                undefined,
                true,
            ),
        );
        // Nothing runs yet (still opening the stack): nothing to save, so stop right away.
        if (!driver.cancel() && !roll) return void exitReleasing(EXIT.interrupted);
        process.stderr.write(
            roll
                ? "\ncancelling: the roll stops after the step in flight and removes its surge (Ctrl-C again to quit now)\n"
                : "\ncancelling: the engine finishes what is in flight and saves state (Ctrl-C again to quit now)\n",
        );
    };
    // The store's lock lost: the driver's run is cancelled already (lock-loss.ts); a roll stops too.
    const onLoss = () => stop.abort(lockLossSignal.reason);
    lockLossSignal.addEventListener("abort", onLoss, { once: true });
    process.on("SIGINT", onSigint);
    try {
        return await fn(stop.signal, () => (roll = true));
    } finally {
        process.off("SIGINT", onSigint);
        lockLossSignal.removeEventListener("abort", onLoss);
    }
}

/**
 * Runs one engine operation with progress (the caller holds the writer lock when it writes); `observe`
 * sees every progress event too. Returns the result and the proxies after up/refresh.
 */
export async function runEngine(
    kind: OperationKind,
    opts: EngineRunOptions,
    observe?: (e: ProgressEvent) => void,
): Promise<{ result: OperationResult; proxies?: ProxyMember[]; rolling?: RolledPool[] }> {
    // Validate before the engine starts: a config error names its path and nothing is touched.
    if (kind === "up" || kind === "preview") preflight(loadStackConfig(projectDir(opts), opts.stack));
    const driver = driverFor(opts, kind === "up" || kind === "preview");
    const print = opts.quiet ? undefined : progressPrinter();
    if (!opts.quiet) process.stderr.write(`${kind} stack ${opts.stack} (${projectDir(opts)})\n`);
    const onProgress = (e: ProgressEvent) => (observe?.(e), print?.(e));
    let result: OperationResult & { rolling?: RolledPool[] };
    try {
        result = await cancellable(driver, async (stop, rolling) => {
            // Under Ctrl-C's safe cancel too: the roll's preview and steps are engine runs.
            if (kind === "up" && opts.roll) {
                rolling();
                const rolled = await rollUp(driver, {
                    projectRoot: projectDir(opts),
                    stack: opts.stack,
                    checkUrl: checkUrlOf(opts.checkUrl),
                    healthTimeoutMs: healthTimeoutMs(opts.healthTimeout),
                    refresh: opts.refresh,
                    onProgress,
                    signal: stop,
                });
                if (rolled) return rolled;
                if (stop.aborted) throw stop.reason as Error; // Ctrl-C while it found nothing to roll
            }
            if (kind === "up" && opts.counts) return countsUp(driver, opts, opts.counts, onProgress);
            return driver[kind]({ onProgress, refresh: opts.refresh });
        });
    } catch (e) {
        // Lost the store's lock: the state is the new holder's to read (withWriterLock says why).
        if (lockLoss()) throw e;
        // Interrupted: what runs now is what state says (not the previous run's stack output).
        if (e instanceof EngineError && e.interrupted && kind !== "preview")
            throw new InterruptedError(e.message, await driver.membersInState());
        throw e;
    }
    const proxies = kind === "up" ? result.proxies : kind === "refresh" ? await driver.proxies() : undefined;
    const { rolling, ...plain } = result;
    return { result: plain, proxies, ...(rolling ? { rolling } : {}) };
}

/**
 * The `up` of a count change: its members targeted with their dependents and no refresh (engine
 * countTargets), when the rest of the stack file is what the last full `up` applied (its `appliedConfig`
 * output, config/fingerprint.ts). A plain `up` when the file holds other edits too, when state has no
 * member of a pool to name new ones after, or when nothing changes.
 */
async function countsUp(
    driver: StackDriver,
    opts: EngineRunOptions,
    counts: Record<string, number>,
    onProgress: (e: ProgressEvent) => void,
): Promise<OperationResult> {
    const file = configFingerprint(projectDir(opts), opts.stack);
    const target = file && file === (await driver.appliedConfig()) ? await driver.countTargets(counts) : undefined;
    if (!target) return driver.up({ onProgress, refresh: opts.refresh });
    return driver.up({ onProgress, refresh: false, target, targetDependents: true });
}

/** `--check-url`, checked before anything runs. */
function checkUrlOf(url: string | undefined): string | undefined {
    if (url !== undefined && !/^https?:\/\/[^/]+/.test(url))
        throw new UsageError(`--check-url must be an http:// or https:// URL (got "${url}")`);
    return url;
}

/** `--health-timeout <seconds>` in ms (undefined: the default). */
function healthTimeoutMs(seconds: string | undefined): number | undefined {
    if (seconds === undefined) return undefined;
    const n = Number(seconds);
    if (!Number.isFinite(n) || n <= 0 || n > 86_400)
        throw new UsageError(`--health-timeout must be a number of seconds between 0 and 86400 (got "${seconds}")`);
    return Math.round(n * 1000);
}

/** An engine operation as a command: under the writer lock unless it only reads (preview), then printed. */
async function runOperation(kind: OperationKind, opts: EngineRunOptions): Promise<void> {
    const run = () => runEngine(kind, { ...opts, roll: kind === "up" && !opts.allAtOnce });
    const { result, proxies, rolling } =
        kind === "preview" ? await run() : await withWriterLock(opts, `egress ${kind}`, run);
    if (opts.json)
        process.stdout.write(
            JSON.stringify({ ok: true, ...result, ...(rolling ? { rolling } : {}), ...(proxies ? { proxies } : {}) }) +
                "\n",
        );
    else {
        process.stderr.write(summaryLine(result) + "\n");
        if (proxies) process.stdout.write(proxyTable(proxies));
    }
}

export function registerOperations(program: Command): void {
    storeOption(program.command("up"))
        .description(
            "create or update the stack's proxies to match its config (refreshes first, so dead proxies come back)",
        )
        .option("--no-refresh", "skip the refresh before the update")
        .option(
            "--all-at-once",
            "replace members whose config changed all together (by default they roll: maxSurge at a time, each healthy before the next batch)",
        )
        .option(
            "--check-url <url>",
            "URL probed through new members while rolling; must be reachable from the proxies (default: a loopback echo, right for local proxies only)",
            process.env.EGRESS_CHECK_URL,
        )
        .option(
            "--health-timeout <seconds>",
            `how long a new member may take to pass a probe while rolling (default ${HEALTHY_TIMEOUT_MS / 1000})`,
        )
        .option("-q, --quiet", "no progress output")
        .action(action(async (o, cmd) => runOperation("up", { ...cmd.optsWithGlobals(), ...o })));
    program
        .command("preview")
        .description("show what `up` would change, without changing anything")
        .option("-q, --quiet", "no progress output")
        .action(action(async (o, cmd) => runOperation("preview", { ...cmd.optsWithGlobals(), ...o })));
    storeOption(program.command("refresh"))
        .description("reconcile state with what actually runs (marks dead proxies for recreation)")
        .option("-q, --quiet", "no progress output")
        .action(action(async (o, cmd) => runOperation("refresh", { ...cmd.optsWithGlobals(), ...o })));
    storeOption(program.command("destroy"))
        .description("remove every proxy of the stack")
        .option("-y, --yes", "confirm: destroy without asking")
        .option("-q, --quiet", "no progress output")
        .action(
            action(async (o, cmd) => {
                if (!o.yes) throw new UsageError("destroy removes every proxy of the stack; pass --yes to confirm");
                await runOperation("destroy", { ...cmd.optsWithGlobals(), ...o });
            }),
        );
    program
        .command("outputs")
        .description("print the stack output `proxies` (and, with --show-secrets, the proxy credentials)")
        .option(
            "--show-secrets",
            "also print the secret output `credentials`: the username and password of each pool with `auth`",
        )
        .action(
            action(async (o: { showSecrets?: boolean }, cmd) => {
                const opts = cmd.optsWithGlobals() as GlobalOptions;
                const driver = driverFor(opts, false);
                const proxies = await driver.proxies();
                const credentials = o.showSecrets ? await driver.credentials() : undefined;
                // The envelope every --json command prints: `ok`, then the payload under a name.
                const memberCredentials =
                    credentials && Object.keys(credentials.members).length ? credentials.members : undefined;
                if (opts.json)
                    return void process.stdout.write(
                        JSON.stringify({
                            ok: true,
                            proxies,
                            ...(credentials ? { credentials: credentials.pools } : {}),
                            ...(memberCredentials ? { memberCredentials } : {}),
                        }) + "\n",
                    );
                let text = proxyTable(proxies);
                if (credentials) text += credentialsTable(credentials.pools, memberCredentials);
                else if (proxies.some((p) => p.auth))
                    text += "\nproxies marked auth require credentials: `egress outputs --show-secrets` prints them\n";
                process.stdout.write(text);
            }),
        );
}
