/**
 * What every use of one stack shares, reads and operations alike: the workspace (opened once, through
 * egress-supervise), the order of calls, the backend, and the one place that reads the stack's state.
 */
import * as path from "node:path";
import type { PulumiCommand, Stack } from "@pulumi/pulumi/automation";
import { StackAlreadyExistsError, StackNotFoundError } from "@pulumi/pulumi/automation/errors";
import type { ProgramScope } from "../program";
import { automation, programModule } from "./automation";
import { engineEnv, engineHome, EngineHome } from "./env";
import { stateBackend, StateBackend } from "./backend";
import { Deployment, fileCheckpoint, PROJECT } from "./checkpoint";
import { classifyBackendError, EngineMissingError, StackMissingError } from "./engine-errors";
import { newRunMarker } from "./leftovers";
import { clearDeadRuns } from "./recovery";
import { supervise } from "./supervised";
import { openRecoveringSalt } from "./salt";
import { pulumiCommandIn } from "./pulumi-command";
import { installationInState, ResolvedInstallation } from "./installation";

export interface DriverOptions {
    /** Directory with Pulumi.yaml and stacks/ (the Pulumi project). */
    workDir: string;
    stack: string;
    /** Where the CLI, backend and passphrase live. @default engineHome() */
    home?: EngineHome;
    /** Extra environment for the CLI (tests point the backend elsewhere). */
    env?: Record<string, string>;
    /** Create the stack when missing. Off for commands that only read or remove. @default true */
    create?: boolean;
    /**
     * Where the stack's installation comes from instead of its own state: a shard stack's is its
     * installation stack's (fleet-driver.ts). Unset: the stack's state.
     */
    installationOf?: () => Promise<ResolvedInstallation>;
    /** Hears what the driver cleaned up on its own (a dead run's processes or locks): one line each, for the log. */
    onNotice?: (line: string) => void;
}

export class StackSession {
    readonly workDir: string;
    readonly stackName: string;
    /** Where this stack's state lives (its URL may carry a password: log `backend.shown`). */
    readonly backend: StateBackend;
    protected readonly home: EngineHome;
    protected readonly extraEnv: Record<string, string>;
    protected readonly onNotice: (line: string) => void;
    /** Marks every engine process this driver starts (leftovers.ts). */
    protected readonly marker = newRunMarker();
    private readonly create: boolean;
    private readonly installationOf?: () => Promise<ResolvedInstallation>;
    private tail: Promise<unknown> = Promise.resolve();
    private stack?: Promise<Stack>;
    private deadRunsCleared = false;
    /** Pool → count the program uses instead of the stack file's (setPoolCounts). */
    private poolCounts: Record<string, number> = {};
    /** The running `up`'s member scope (driver.ts sets it per operation; program.ts ProgramScope). */
    protected programScope?: ProgramScope;

    constructor(opts: DriverOptions) {
        this.workDir = path.resolve(opts.workDir);
        this.stackName = opts.stack;
        this.home = opts.home ?? engineHome();
        this.extraEnv = opts.env ?? {};
        this.create = opts.create ?? true;
        this.installationOf = opts.installationOf;
        this.onNotice = opts.onNotice ?? (() => undefined);
        this.backend = stateBackend(this.home, this.extraEnv);
    }

    /**
     * Makes the following runs of the program see these pools at these counts, whatever the stack file
     * says; `{}` goes back to the file. The CLI's rolling change (src/cli/rolling.ts) surges this way
     * rather than by editing the stack file, which a person owns (the service writes its file instead).
     */
    setPoolCounts(counts: Record<string, number>): void {
        this.poolCounts = { ...counts };
    }

    /** The pool counts the program uses instead of the stack file's (setPoolCounts). */
    protected countsInUse(): Readonly<Record<string, number>> {
        return this.poolCounts;
    }

    /** The file backend's directory; undefined for every other backend. */
    protected backendDir(): string | undefined {
        return this.backend.fileDir;
    }

    /**
     * The stack's latest deployment (resources, pending operations). The one choice between the two
     * ways to read it: a file backend's checkpoint file when it can be read (no CLI start, and no wait
     * behind a running operation), else `pulumi stack export`, which every backend answers (PostgreSQL,
     * object stores). Export takes no lock, so it is not queued behind an operation either.
     */
    protected async readDeployment(): Promise<Deployment> {
        const dir = this.backendDir();
        const fromFile = dir ? fileCheckpoint(dir, this.stackName) : undefined;
        if (fromFile) return fromFile;
        const stack = await this.open();
        try {
            return ((await stack.exportStack()).deployment ?? {}) as Deployment;
        } catch (e) {
            throw classifyBackendError(e, this.backend);
        }
    }

    /** installationInState over the deployment readDeployment returns (or one the caller just read). */
    protected async readInstallation(dep?: Deployment): Promise<ResolvedInstallation> {
        if (this.installationOf) return this.installationOf();
        return installationInState((dep ?? (await this.readDeployment())).resources ?? [], PROJECT, this.stackName);
    }

    /** clearDeadRuns, remembered so the `open()` that follows does not repeat it. */
    protected clearDeadRuns(): string[] {
        this.deadRunsCleared = true;
        return clearDeadRuns(this.backendDir(), this.stackName);
    }

    /** The stack file (Pulumi.yaml's `stackConfigDir: stacks`), as the user would type it. */
    protected stackFileForHumans(): string {
        const file = path.join(this.workDir, "stacks", `Pulumi.${this.stackName}.yaml`);
        const rel = path.relative(process.cwd(), file);
        return rel && !rel.startsWith("..") ? rel : file;
    }

    /** Runs `fn` after every earlier call of this driver settled. */
    protected serial<T>(fn: () => Promise<T>): Promise<T> {
        const next = this.tail.then(fn, fn);
        this.tail = next.catch(() => undefined);
        return next;
    }

    /**
     * The installation the program proposes when it runs (the driver reads it from state before every
     * operation); the program is built once, so it asks through this.
     */
    protected proposedInstallation(): ResolvedInstallation {
        throw new Error("internal: the program ran without the driver reading the stack's installation first");
    }

    protected open(): Promise<Stack> {
        this.stack ??= (async () => {
            // Before the CLI first loads the stack: a half-written backend file left by a crash would fail it
            // (read-only callers get here without an operation's own clearing pass).
            if (!this.deadRunsCleared) for (const line of this.clearDeadRuns()) this.onNotice(line);
            const { LocalWorkspace } = automation();
            const real = await pulumiCommandIn(this.home.dir).catch((e) => {
                throw new EngineMissingError(
                    `the Pulumi CLI is missing from ${this.home.binDir}: run \`npm run setup\` (${(e as Error).message})`,
                );
            });
            let pulumiCommand: PulumiCommand;
            try {
                pulumiCommand = supervise(real, path.join(this.home.binDir, "egress-supervise"), this.marker);
            } catch (e) {
                throw new EngineMissingError((e as Error).message);
            }
            const program = programModule().createProgram({
                projectRoot: this.workDir,
                stateDir: this.home.runDir,
                installation: () => this.proposedInstallation().installation,
                poolCounts: () => this.poolCounts,
                scope: () => this.programScope,
            });
            const args = { stackName: this.stackName, projectName: PROJECT, program };
            const ws = {
                workDir: this.workDir,
                pulumiCommand,
                envVars: { ...engineEnv(this.home, { ...process.env, ...this.extraEnv }), ...this.extraEnv },
            };
            const select = () =>
                pastTableRace(
                    () =>
                        this.create
                            ? LocalWorkspace.createOrSelectStack(args, ws).catch((e) =>
                                  selectRaceWinner(e, () => LocalWorkspace.selectStack(args, ws)),
                              )
                            : LocalWorkspace.selectStack(args, ws).catch((e) => {
                                  throw e instanceof StackNotFoundError ? new StackMissingError(this.stackName) : e;
                              }),
                    this.onNotice,
                );

            return openRecoveringSalt(select, {
                stackFile: path.join(this.workDir, "stacks", `Pulumi.${this.stackName}.yaml`),
                shownAs: this.stackFileForHumans(),
                backendDir: this.backendDir(),
                stack: this.stackName,
                onNotice: this.onNotice,
            }).catch((e) => {
                throw classifyBackendError(e, this.backend);
            });
        })();
        this.stack.catch(() => (this.stack = undefined));
        return this.stack;
    }
}

/**
 * The first processes to open a new PostgreSQL database together all run the backend's `CREATE TABLE IF
 * NOT EXISTS pulumi_state`, which PostgreSQL does not make safe against itself: one creates the table,
 * the others fail with a unique violation on the catalog (`pg_type_typname_nsp_index`, 23505) or, a
 * moment later in the same race, with the table's row type already there (`type "pulumi_state" already
 * exists`, 42710). Three replicas of a first deploy started at once met each, and a loser exited. The
 * table exists by then, so the loser opens again.
 */
const TABLE_RACE =
    /failed to create table[^\n]*(?:duplicate key value violates unique constraint|already exists \((?:42710|42P07)\))/;
const TABLE_RACE_WAITS_MS = [100, 300, 1000];

export async function pastTableRace<T>(open: () => Promise<T>, onNotice: (line: string) => void): Promise<T> {
    for (const ms of TABLE_RACE_WAITS_MS) {
        try {
            return await open();
        } catch (e) {
            if (!TABLE_RACE.test((e as Error)?.message ?? "")) throw e;
            onNotice("another process was creating the backend's state table at the same moment: opening again");
            await new Promise((r) => setTimeout(r, ms));
        }
    }
    return open();
}

/** How long apart a loser of the race to create a stack looks for the winner's (selectRaceWinner). */
const RACE_SELECT_WAITS_MS = [0, 250, 500, 1000, 2000];

/**
 * Replicas and CLIs started together all find no stack and all create it (issue 35). The losers fail:
 * `already exists`, or on PostgreSQL `could not create stack: could not list bucket` (a listing that met
 * the winner's rows half-written). Such a loser selects the winner's stack, looking again for a few
 * seconds while the winner's create completes; `failed` stands when none can be selected by then, or
 * when it was not a create that failed.
 */
async function selectRaceWinner(failed: unknown, select: () => Promise<Stack>): Promise<Stack> {
    const lostCreate =
        failed instanceof StackAlreadyExistsError || /could not create stack/.test((failed as Error)?.message ?? "");
    if (!lostCreate) throw failed;
    for (const ms of RACE_SELECT_WAITS_MS) {
        await new Promise((r) => setTimeout(r, ms));
        try {
            return await select();
        } catch {
            // not there yet, or the backend still mid-write: look again
        }
    }
    throw failed;
}
