import * as path from "node:path";
import {
    LocalWorkspace,
    PulumiCommand,
    Stack,
    EngineEvent,
    ConcurrentUpdateError,
    StackNotFoundError,
} from "@pulumi/pulumi/automation";
import { createProgram } from "../program";
import type { ProxyMember, StackCredentials } from "../model";
import { engineEnv, engineHome, EngineHome } from "./env";
import { ProgressEvent, toProgress } from "./progress";
import { stackLocks } from "./locks";
import { checkpointMembers, checkpointPendingCount, checkpointResources, fileBackendDir, PROJECT } from "./checkpoint";
import { MemberTargets, memberTargets, StateResource } from "./member-urns";
import { newRunMarker } from "./leftovers";
import { clearDeadRuns, finishPendingOperations, membersInState } from "./recovery";
import { supervise } from "./supervised";
import { tolerateProgramDisconnects } from "./program-disconnect";
import { forgetMember, ForgetResult } from "./forget";
import { isIncorrectPassphrase, openRecoveringSalt, PassphraseMismatchError } from "./salt";
import { installationInState, ResolvedInstallation } from "./installation";

export type OperationKind = "up" | "preview" | "refresh" | "destroy";

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
    /** Hears what the driver cleaned up on its own (a dead run's processes or locks): one line each, for the log. */
    onNotice?: (line: string) => void;
}

export interface OperationOptions {
    /** Called for every progress event, in order. */
    onProgress?: (e: ProgressEvent) => void;
    /** `up` only: refresh state first so dead proxies are noticed and recreated. @default true */
    refresh?: boolean;
    /**
     * `up` and `refresh`: touch these URNs alone (`up`: with `targetDependents`, also what depends on
     * them, children too). The service's repair of single members.
     */
    target?: string[];
    /** `up` only: replace these URNs even when their inputs did not change. */
    replace?: string[];
    /** `up` only, with `target`. */
    targetDependents?: boolean;
}

export interface OperationResult {
    kind: OperationKind;
    /** Resource changes by op (`create`, `delete`, `same`, ...). */
    changes: Record<string, number>;
    durationMs: number;
    /** `up` only: the stack output `proxies` the update produced (the engine returns outputs with it). */
    proxies?: ProxyMember[];
}

/** An engine operation failed; `message` carries the engine's own error lines, never the whole log. */
export class EngineError extends Error {
    /** True when another update held the stack lock: retrying later may succeed. */
    readonly locked: boolean;
    constructor(
        readonly kind: OperationKind,
        message: string,
        readonly cause?: unknown,
        readonly interrupted = false,
    ) {
        super(interrupted ? `${kind} interrupted: ${message}` : `${kind} failed: ${message}`);
        this.name = "EngineError";
        this.locked = cause instanceof ConcurrentUpdateError;
    }
}

/** The Pulumi CLI is not installed where egress looks for it (a prerequisite, not a failed operation). */
export class EngineMissingError extends Error {
    constructor(message: string) {
        super(message);
        this.name = "EngineMissingError";
    }
}

/** The stack does not exist in the backend (commands that only read or remove never create one). */
export class StackMissingError extends Error {
    constructor(stack: string) {
        super(
            `stack "${stack}" does not exist in this backend; run \`egress up --stack ${stack}\` first (or check --stack)`,
        );
        this.name = "StackMissingError";
    }
}

/**
 * One stack, driven through automation-API inline programs. Operations on a driver run one at a time in
 * call order; a caller that wants coalescing (latest desired state wins) builds it on top (src/service).
 */
export class StackDriver {
    readonly workDir: string;
    readonly stackName: string;
    private readonly home: EngineHome;
    private readonly extraEnv: Record<string, string>;
    private readonly create: boolean;
    private readonly onNotice: (line: string) => void;
    private tail: Promise<unknown> = Promise.resolve();
    private stack?: Promise<Stack>;
    /** Marks every engine process this driver starts (leftovers.ts). */
    private readonly marker = newRunMarker();
    /** Cancels the running operation (SIGINT to the CLI: it stops starting steps and saves state). */
    private running?: AbortController;
    private deadRunsCleared = false;
    /** What the next program run proposes as the installation; set from state before every operation. */
    private proposed?: ResolvedInstallation;

    constructor(opts: DriverOptions) {
        this.workDir = path.resolve(opts.workDir);
        this.stackName = opts.stack;
        this.home = opts.home ?? engineHome();
        this.extraEnv = opts.env ?? {};
        this.create = opts.create ?? true;
        this.onNotice = opts.onNotice ?? (() => undefined);
    }

    up(opts: OperationOptions = {}): Promise<OperationResult> {
        return this.operation("up", opts, (s, onEvent, signal) =>
            s.up({
                onEvent,
                signal,
                refresh: opts.refresh ?? true,
                target: opts.target,
                replace: opts.replace,
                targetDependents: opts.targetDependents,
            }),
        );
    }
    preview(opts: OperationOptions = {}): Promise<OperationResult> {
        return this.operation("preview", opts, (s, onEvent, signal) => s.preview({ onEvent, signal }));
    }
    refresh(opts: OperationOptions = {}): Promise<OperationResult> {
        return this.operation("refresh", opts, (s, onEvent, signal) =>
            s.refresh({ onEvent, signal, target: opts.target }),
        );
    }
    destroy(opts: OperationOptions = {}): Promise<OperationResult> {
        return this.operation("destroy", opts, (s, onEvent, signal) => s.destroy({ onEvent, signal }));
    }

    /**
     * Asks the running operation to stop: the CLI starts no new steps, waits for the ones in flight and
     * saves state; the operation then rejects with an EngineError whose `interrupted` is true. Returns
     * false when nothing runs.
     */
    cancel(): boolean {
        if (!this.running) return false;
        this.running.abort();
        return true;
    }

    /**
     * The members state knows (each member component's outputs), which after an interrupted or failed
     * update may differ from the stack output `proxies` of the last successful one.
     */
    async membersInState(): Promise<ProxyMember[]> {
        // The checkpoint file when the backend is local: no CLI start, and no wait behind a running operation.
        const fromFile = checkpointMembers(this.backendDir(), this.stackName);
        if (fromFile) return fromFile;
        return this.serial(async () => membersInState(await this.open()));
    }

    /** What a targeted repair of these members touches (member-urns.ts): from the checkpoint file when it can, else an export. */
    async memberTargets(ids: readonly string[]): Promise<MemberTargets> {
        return this.serial(async () => {
            const dir = this.backendDir();
            const resources =
                (dir && checkpointResources(dir, this.stackName)) ||
                ((await (await this.open()).exportStack()).deployment as { resources?: StateResource[] } | undefined)
                    ?.resources ||
                [];
            return memberTargets(resources, ids);
        });
    }

    /** The stack output `proxies` (empty before the first `up`). */
    async proxies(): Promise<ProxyMember[]> {
        return this.serial(async () => {
            const outs = await (await this.open()).outputs();
            return (outs.proxies?.value as ProxyMember[] | undefined) ?? [];
        });
    }

    /**
     * The secret stack outputs `credentials` (pool → the credentials its members require) and
     * `memberCredentials` (member → its own proxy's), decrypted by the engine; empty before the first
     * `up` and for stacks without any. Never log the result.
     */
    async credentials(): Promise<StackCredentials> {
        return this.serial(async () => {
            const outs = await (await this.open()).outputs();
            return {
                pools: (outs.credentials?.value as StackCredentials["pools"] | undefined) ?? {},
                members: (outs.memberCredentials?.value as StackCredentials["members"] | undefined) ?? {},
            };
        });
    }

    /**
     * The stack's installation as its state says (installation.ts): the recorded id, the legacy id of a
     * stack made before ids, or a fresh one for a stack that holds nothing (that one is only proposed: the
     * next `up` records it). gc, liveness hooks and crash undo act only on things carrying it.
     */
    async installation(): Promise<ResolvedInstallation> {
        return this.serial(() => this.readInstallation());
    }

    /** Resources in state, as `type::name` — what `destroy` must leave empty. */
    async resources(): Promise<{ type: string; name: string; id?: string }[]> {
        return this.serial(async () => {
            const dep = await (await this.open()).exportStack();
            const res = ((dep.deployment as any)?.resources ?? []) as { type: string; urn: string; id?: string }[];
            return res.map((r) => ({ type: r.type, name: r.urn.split("::").pop()!, id: r.id }));
        });
    }

    /**
     * The stack's `egress:*` config with secrets decrypted, as `{providers, pools}` (for checkers and gc,
     * which talk to providers outside the engine). Never log the result.
     */
    async config(): Promise<{ providers?: unknown; pools?: unknown }> {
        return this.serial(async () => {
            const all = await (await this.open()).getAllConfig();
            const get = (k: string) => (all[k] ? JSON.parse(all[k].value) : undefined);
            return { providers: get("egress:providers"), pools: get("egress:pools") };
        });
    }

    /**
     * Makes the stack usable after a crash: ends engine processes of dead runs, removes locks whose
     * holder died (a live holder's lock is left alone, and then nothing else is touched), and finishes
     * pending operations a killed update left in state (recovery.ts). Returns what it did, for the log.
     */
    async recover(): Promise<string[]> {
        return this.serial(async () => {
            // Before the CLI first loads the stack: a half-written backend file would fail that load.
            const done = this.clearDeadRuns();
            const stack = await this.open();
            return [
                ...done,
                ...(await finishPendingOperations(
                    stack,
                    this.backendDir(),
                    this.stackName,
                    (await this.readInstallation()).installation,
                )),
            ];
        });
    }

    /** Removes one member's resources from state, leaving what they run behind (forget.ts); `apply: false` only reports. */
    forget(member: string, apply: boolean): Promise<ForgetResult> {
        return this.serial(async () => forgetMember(await this.open(), member, apply));
    }

    /** Locks held on this stack by running updates (file backend; other backends report none). */
    liveLocks(): { pid: number; hostname: string }[] {
        return stackLocks(this.backendDir(), this.stackName).filter((l) => l.alive);
    }

    /** clearDeadRuns, remembered so the `open()` that follows does not repeat it. */
    private clearDeadRuns(): string[] {
        this.deadRunsCleared = true;
        return clearDeadRuns(this.backendDir(), this.stackName);
    }

    /** The stack file (Pulumi.yaml's `stackConfigDir: stacks`), as the user would type it. */
    private stackFileForHumans(): string {
        const file = path.join(this.workDir, "stacks", `Pulumi.${this.stackName}.yaml`);
        const rel = path.relative(process.cwd(), file);
        return rel && !rel.startsWith("..") ? rel : file;
    }

    /** installationInState over the checkpoint file when the backend is local, else over an export. */
    private async readInstallation(): Promise<ResolvedInstallation> {
        const dir = this.backendDir();
        const resources =
            (dir && checkpointResources(dir, this.stackName)) ||
            ((await (await this.open()).exportStack()).deployment as { resources?: StateResource[] } | undefined)
                ?.resources ||
            [];
        return installationInState(resources, PROJECT, this.stackName);
    }

    private backendDir(): string | undefined {
        return fileBackendDir(this.home, this.extraEnv);
    }

    private operation(
        kind: OperationKind,
        opts: OperationOptions,
        run: (s: Stack, onEvent: (e: EngineEvent) => void, signal: AbortSignal) => Promise<unknown>,
    ): Promise<OperationResult> {
        return this.serial(async () => {
            const started = Date.now();
            // Every command, not only `serve`, cleans up after a dead run before it starts its own (and
            // before the CLI loads the stack, which a half-written backend file would fail).
            for (const line of this.clearDeadRuns()) this.onNotice(line);
            const stack = await this.open();
            // A writer finishes what a killed run left pending before it starts (not only `serve` at
            // start-up): an `up` on top of pending creates would leave them for a later recovery to undo
            // after this run recorded the same names. Cheap when the checkpoint shows none.
            if (kind !== "preview" && checkpointPendingCount(this.backendDir(), this.stackName) !== 0)
                for (const line of await finishPendingOperations(
                    stack,
                    this.backendDir(),
                    this.stackName,
                    (await this.readInstallation()).installation,
                ))
                    this.onNotice(line);
            // Read after recovery (which may have changed state): the program proposes what state says now.
            this.proposed = await this.readInstallation();
            let changes: Record<string, number> = {};
            const diagnostics: string[] = [];
            const onEvent = (e: EngineEvent) => {
                const p = toProgress(e);
                if (!p) return;
                if (p.kind === "summary" && p.changes) changes = p.changes;
                if (p.kind === "diagnostic" && p.severity === "error" && p.message) diagnostics.push(p.message);
                opts.onProgress?.(p);
            };
            tolerateProgramDisconnects((line) => this.onNotice(line));
            let outcome: unknown;
            const controller = (this.running = new AbortController());
            try {
                outcome = await run(stack, onEvent, controller.signal);
            } catch (e) {
                if (e instanceof ConcurrentUpdateError) {
                    const holders = stackLocks(this.backendDir(), this.stackName).map(
                        (l) => `pid ${l.pid}@${l.hostname}`,
                    );
                    throw new EngineError(
                        kind,
                        `another update holds the stack lock (${holders.join(", ") || "unknown holder"}); wait for it — a lock whose process died is removed by the next egress command`,
                        e,
                    );
                }
                if (controller.signal.aborted)
                    throw new EngineError(kind, "cancelled on request; the engine saved what it had done", e, true);
                if (isIncorrectPassphrase(e))
                    throw new PassphraseMismatchError(this.stackFileForHumans(), this.stackName);
                const detail = diagnostics.length ? diagnostics.join("\n") : lastLines((e as Error).message, 8);
                throw new EngineError(kind, detail, e);
            } finally {
                this.running = undefined;
            }
            const outputs = (outcome as { outputs?: Record<string, { value: unknown }> } | undefined)?.outputs;
            const proxies = outputs ? ((outputs.proxies?.value as ProxyMember[] | undefined) ?? []) : undefined;
            return { kind, changes, durationMs: Date.now() - started, ...(proxies ? { proxies } : {}) };
        });
    }

    /** Runs `fn` after every earlier operation of this driver settled. */
    private serial<T>(fn: () => Promise<T>): Promise<T> {
        const next = this.tail.then(fn, fn);
        this.tail = next.catch(() => undefined);
        return next;
    }

    private open(): Promise<Stack> {
        this.stack ??= (async () => {
            // Before the CLI first loads the stack: a half-written backend file left by a crash would fail it
            // (read-only callers get here without an operation's own clearing pass).
            if (!this.deadRunsCleared) for (const line of this.clearDeadRuns()) this.onNotice(line);
            const real = await PulumiCommand.get({ root: this.home.dir }).catch((e) => {
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
            const program = createProgram({
                projectRoot: this.workDir,
                stateDir: this.home.runDir,
                installation: () => {
                    if (!this.proposed)
                        throw new Error(
                            "internal: the program ran without the driver reading the stack's installation first",
                        );
                    return this.proposed.installation;
                },
            });
            const args = { stackName: this.stackName, projectName: "egress", program };
            const ws = {
                workDir: this.workDir,
                pulumiCommand,
                envVars: { ...engineEnv(this.home, { ...process.env, ...this.extraEnv }), ...this.extraEnv },
            };
            const select = () =>
                this.create
                    ? LocalWorkspace.createOrSelectStack(args, ws)
                    : LocalWorkspace.selectStack(args, ws).catch((e) => {
                          throw e instanceof StackNotFoundError ? new StackMissingError(this.stackName) : e;
                      });
            return openRecoveringSalt(select, {
                stackFile: path.join(this.workDir, "stacks", `Pulumi.${this.stackName}.yaml`),
                shownAs: this.stackFileForHumans(),
                backendDir: this.backendDir(),
                stack: this.stackName,
                onNotice: this.onNotice,
            });
        })();
        this.stack.catch(() => (this.stack = undefined));
        return this.stack;
    }
}

function lastLines(s: string, n: number): string {
    return s
        .trim()
        .split("\n")
        .filter((l) => l.trim())
        .slice(-n)
        .join("\n");
}
