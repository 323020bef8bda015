import * as path from "node:path";
import { LocalWorkspace, PulumiCommand, Stack, EngineEvent, ConcurrentUpdateError, StackNotFoundError } from "@pulumi/pulumi/automation";
import { createProgram } from "../program";
import type { ProxyMember } from "../../components/member";
import { engineEnv, engineHome, EngineHome } from "./env";
import { ProgressEvent, toProgress } from "./progress";
import { removeStaleLocks, stackLocks } from "./locks";

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
}

export interface OperationOptions {
    /** Called for every progress event, in order. */
    onProgress?: (e: ProgressEvent) => void;
    /** `up` only: refresh state first so dead proxies are noticed and recreated. @default true */
    refresh?: boolean;
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
    constructor(readonly kind: OperationKind, message: string, readonly cause?: unknown) {
        super(`${kind} failed: ${message}`);
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
        super(`stack "${stack}" does not exist in this backend; run \`egress up --stack ${stack}\` first (or check --stack)`);
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
    private tail: Promise<unknown> = Promise.resolve();
    private stack?: Promise<Stack>;

    constructor(opts: DriverOptions) {
        this.workDir = path.resolve(opts.workDir);
        this.stackName = opts.stack;
        this.home = opts.home ?? engineHome();
        this.extraEnv = opts.env ?? {};
        this.create = opts.create ?? true;
    }

    up(opts: OperationOptions = {}): Promise<OperationResult> {
        return this.operation("up", opts, (s, onEvent) => s.up({ onEvent, refresh: opts.refresh ?? true }));
    }
    preview(opts: OperationOptions = {}): Promise<OperationResult> {
        return this.operation("preview", opts, (s, onEvent) => s.preview({ onEvent }));
    }
    refresh(opts: OperationOptions = {}): Promise<OperationResult> {
        return this.operation("refresh", opts, (s, onEvent) => s.refresh({ onEvent }));
    }
    destroy(opts: OperationOptions = {}): Promise<OperationResult> {
        return this.operation("destroy", opts, (s, onEvent) => s.destroy({ onEvent }));
    }

    /** The stack output `proxies` (empty before the first `up`). */
    async proxies(): Promise<ProxyMember[]> {
        return this.serial(async () => {
            const outs = await (await this.open()).outputs();
            return (outs.proxies?.value as ProxyMember[] | undefined) ?? [];
        });
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
     * Makes the stack usable after a crash: removes file-backend locks whose process is gone (a live
     * holder's lock is left alone, and then nothing else is touched), and clears pending operations a
     * killed run left in state. Returns what it did, for the log.
     */
    async recover(): Promise<string[]> {
        return this.serial(async () => {
            const stack = await this.open();
            const done: string[] = [];
            const stale = removeStaleLocks(this.backendDir(), this.stackName);
            if (stale.length) done.push(`removed ${stale.length} stale lock(s) left by dead pid(s) ${stale.map((l) => l.pid).join(", ")}`);
            const live = stackLocks(this.backendDir(), this.stackName);
            if (live.length) {
                done.push(`stack is locked by live pid(s) ${live.map((l) => `${l.pid}@${l.hostname}`).join(", ")}; leaving it alone`);
                return done;
            }
            const dep = (await stack.exportStack()).deployment as { pending_operations?: unknown[] } | undefined;
            if (dep?.pending_operations?.length) {
                await stack.refresh({ clearPendingCreates: true });
                done.push(`cleared ${dep.pending_operations.length} pending operation(s) with a refresh`);
            }
            return done;
        });
    }

    /** Locks held on this stack by running updates (file backend; other backends report none). */
    liveLocks(): { pid: number; hostname: string }[] {
        return stackLocks(this.backendDir(), this.stackName).filter((l) => l.alive);
    }

    private backendDir(): string | undefined {
        const url = this.extraEnv.PULUMI_BACKEND_URL ?? process.env.PULUMI_BACKEND_URL ?? `file://${this.home.backendDir}`;
        return url.startsWith("file://") ? url.slice("file://".length) : undefined;
    }

    private operation(
        kind: OperationKind,
        opts: OperationOptions,
        run: (s: Stack, onEvent: (e: EngineEvent) => void) => Promise<{ summary?: { resourceChanges?: Record<string, number> } } | unknown>,
    ): Promise<OperationResult> {
        return this.serial(async () => {
            const started = Date.now();
            const stack = await this.open();
            let changes: Record<string, number> = {};
            const diagnostics: string[] = [];
            const onEvent = (e: EngineEvent) => {
                const p = toProgress(e);
                if (!p) return;
                if (p.kind === "summary" && p.changes) changes = p.changes;
                if (p.kind === "diagnostic" && p.severity === "error" && p.message) diagnostics.push(p.message);
                opts.onProgress?.(p);
            };
            let outcome: unknown;
            try {
                outcome = await run(stack, onEvent);
            } catch (e) {
                if (e instanceof ConcurrentUpdateError) {
                    const holders = stackLocks(this.backendDir(), this.stackName).map((l) => `pid ${l.pid}@${l.hostname}`);
                    throw new EngineError(kind, `another update holds the stack lock (${holders.join(", ") || "unknown holder"}); wait for it — a lock whose process died is removed when \`egress serve\` starts`, e);
                }
                const detail = diagnostics.length ? diagnostics.join("\n") : lastLines((e as Error).message, 8);
                throw new EngineError(kind, detail, e);
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
            const pulumiCommand = await PulumiCommand.get({ root: this.home.dir }).catch((e) => {
                throw new EngineMissingError(`the Pulumi CLI is missing from ${this.home.binDir}: run \`npm run setup\` (${(e as Error).message})`);
            });
            const program = createProgram({ projectRoot: this.workDir, stateDir: this.home.runDir });
            const args = { stackName: this.stackName, projectName: "egress", program };
            const ws = { workDir: this.workDir, pulumiCommand, envVars: { ...engineEnv(this.home, { ...process.env, ...this.extraEnv }), ...this.extraEnv } };
            if (this.create) return LocalWorkspace.createOrSelectStack(args, ws);
            return LocalWorkspace.selectStack(args, ws).catch((e) => {
                throw e instanceof StackNotFoundError ? new StackMissingError(this.stackName) : e;
            });
        })();
        this.stack.catch(() => (this.stack = undefined));
        return this.stack;
    }
}

function lastLines(s: string, n: number): string {
    return s.trim().split("\n").filter((l) => l.trim()).slice(-n).join("\n");
}
