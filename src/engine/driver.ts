/**
 * One stack's operations: up, preview, refresh, destroy, crash recovery and forget. The reads live in
 * driver-queries.ts, what both share in stack-session.ts.
 */
import type { Stack, EngineEvent } from "@pulumi/pulumi/automation";
import { ConcurrentUpdateError } from "@pulumi/pulumi/automation/errors";
import type { ProxyMember } from "../model";
import { ProgressEvent, toProgress } from "./progress";
import { stackLocks } from "./locks";
import { Deployment, rootOutput, rootProxies } from "./checkpoint";
import { handOverBeforeUp, wantedMembers } from "./hand-over";
import { upMakingDependencies } from "./shared-targets";
import { withoutReadback } from "./lean-stack";
import { finishPendingOperations } from "./recovery";
import { tolerateProgramDisconnects } from "./program-disconnect";
import { forgetMember, ForgetResult } from "./forget";
import { isIncorrectPassphrase, PassphraseMismatchError } from "./salt";
import type { ResolvedInstallation } from "./installation";
import { BackendUnreachableError, classifyBackendError, EngineError, OperationKind } from "./engine-errors";
import { clearingDeadLocks, liveLockHolders } from "./backend-locks";
import { terminateEngines } from "./supervised";
import { pruneHistory } from "./history-prune";
import { StackQueries } from "./driver-queries";
import { memberScope, membersOfUrns } from "./member-urns";
import { REPAIR_REPLACE_KEY } from "../../components/kind";

/** Preview steps that mean a resource is replaced. */
const REPLACING = new Set<string>(["replace", "create-replacement", "delete-replaced"]);
/** Why a replace step replaces (its `keys`), ranked: no keys given < only a repair < a config change. */
const UNKNOWN = 1;
const REPAIR = 2;
const CHANGE = 3;
function replaceReason(keys: readonly string[] | undefined): number {
    if (!keys?.length) return UNKNOWN;
    return keys.every((k) => k === REPAIR_REPLACE_KEY) ? REPAIR : CHANGE;
}

export type { DriverOptions } from "./stack-session";
export {
    BackendUnreachableError,
    EngineError,
    EngineMissingError,
    StackMissingError,
    type OperationKind,
} from "./engine-errors";

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

/**
 * One stack, driven through automation-API inline programs. Operations on a driver run one at a time in
 * call order; a caller that wants coalescing (latest desired state wins) builds it on top (src/service).
 */
export class StackDriver extends StackQueries {
    /** Cancels the running operation (SIGINT to the CLI: it stops starting steps and saves state). */
    private running?: AbortController;
    /** Why engine runs are refused now (refuseRuns). */
    private refusing?: Error;
    /** What the next program run proposes as the installation; set from state before every operation. */
    private proposed?: ResolvedInstallation;

    /** `up`, making first what its targeted members need and state lacks (shared-targets.ts). */
    up(opts: OperationOptions = {}): Promise<OperationResult> {
        return upMakingDependencies((o) => this.upOnce(o), opts, this.onNotice);
    }
    private upOnce(opts: OperationOptions): Promise<OperationResult> {
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
    /**
     * A preview of a plain `up`, answering which members it would replace (any of their resources
     * replaced: `replace`, `create-replacement`, `delete-replaced`): a rolling change (src/service/control/rolling,
     * the CLI's `up`) replaces those in batches instead of all at once. A member replaced only because
     * it no longer runs (a refresh found it gone) is a repair, not a change: nothing to keep serving.
     */
    async previewReplaced(opts: OperationOptions = {}): Promise<string[]> {
        // Per resource, the strongest reason any of its replace steps gives: a change of its config, only
        // a repair (REPAIR_REPLACE_KEY: it no longer runs), or none given (counted as a change).
        const why = new Map<string, number>();
        await this.operation("preview", opts, (s, onEvent, signal) =>
            s.preview({
                onEvent: (e) => {
                    const m = e.resourcePreEvent?.metadata;
                    if (m && REPLACING.has(m.op)) why.set(m.urn, Math.max(why.get(m.urn) ?? 0, replaceReason(m.keys)));
                    onEvent(e);
                },
                signal,
            }),
        );
        const urns = [...why].filter(([, r]) => r !== REPAIR).map(([urn]) => urn);
        if (!urns.length) return [];
        return this.serial(async () => membersOfUrns((await this.readDeployment()).resources ?? [], urns));
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
     * While `reason` is set, every engine run that would start (up, preview, refresh, destroy) throws it
     * instead: a replica that lost the stack's lock starts none while its abandoned operation winds down
     * (src/service/control/operation-abort.ts). Undefined lets them run again.
     */
    refuseRuns(reason: Error | undefined): void {
        this.refusing = reason;
    }

    /**
     * Ends the running operation at once, when a cancel did not (supervised.ts `terminateEngines`: every
     * engine command of this process). State keeps what the engine wrote; recovery finishes the pending
     * operations it left. Returns false when nothing runs.
     */
    kill(): boolean {
        if (!this.running) return false;
        return terminateEngines() > 0;
    }

    /**
     * Gives the stack up to another holder of its lock (a service leader that lost it, operation-abort.ts;
     * a CLI command that lost it, cli/lock-loss.ts): refuses every further engine run with `reason`,
     * cancels the one in progress (it saves state and stops), and ends its processes if it has not ended
     * `graceMs` later (`kill`, then `onKilled`), a bound another host can count on. `disarm` drops that
     * end once the caller knows the run is over.
     */
    abandon(reason: Error, graceMs: number, onKilled: () => void): { engineRunning: boolean; disarm(): void } {
        this.refuseRuns(reason);
        const engineRunning = this.cancel();
        const timer = setTimeout(() => this.kill() && onKilled(), graceMs);
        timer.unref();
        return { engineRunning, disarm: () => clearTimeout(timer) };
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
            const finished = await this.finishPending(stack, (line) => done.push(line));
            return [...done, ...finished];
        });
    }

    /**
     * The holders of the stack's Pulumi locks that may be running (backend-locks.ts): a file backend's
     * lock files and a PostgreSQL backend's lock rows; none are known for other backends.
     */
    lockHolders(): Promise<{ pid?: number; hostname?: string }[]> {
        return liveLockHolders(this.backend, this.stackName);
    }

    /** State's `appliedConfig` output (program.ts): the stack file digest the last unscoped run applied. */
    async appliedConfig(): Promise<string | undefined> {
        return rootOutput(await this.stateResources(), "appliedConfig");
    }

    /** Removes the stack from its backend (a shard no pool needs, after its destroy: fleet-driver.ts). */
    removeStack(): Promise<void> {
        return this.serial(async () => (await this.open()).workspace.removeStack(this.stackName));
    }

    /** The names of the project's stacks in this backend, as the engine lists them. */
    stackNames(): Promise<string[]> {
        return this.serial(async () => (await (await this.open()).workspace.listStacks()).map((s) => s.name));
    }

    /** Removes one member's resources from state, leaving what they run behind (forget.ts); `apply: false` only reports. */
    forget(member: string, apply: boolean): Promise<ForgetResult> {
        return this.serial(async () => forgetMember(await this.open(), member, apply));
    }

    protected override proposedInstallation(): ResolvedInstallation {
        return this.proposed ?? super.proposedInstallation();
    }

    /** finishPendingOperations (which clears a dead run's backend lock in the way of its refresh itself). */
    private async finishPending(stack: Stack, onNotice: (line: string) => void, dep?: Deployment): Promise<string[]> {
        const installation = (await this.readInstallation(dep)).installation;
        try {
            return await finishPendingOperations(stack, this.backend, this.stackName, installation, onNotice);
        } catch (e) {
            throw classifyBackendError(e, this.backend); // a backend gone meanwhile: the operation's retry waits for it
        }
    }

    private operation(
        kind: OperationKind,
        opts: OperationOptions,
        run: (s: Stack, onEvent: (e: EngineEvent) => void, signal: AbortSignal) => Promise<unknown>,
    ): Promise<OperationResult> {
        return this.serial(async () => {
            if (this.refusing) throw this.refusing;
            const started = Date.now();
            // Every command, not only `serve`, cleans up after a dead run before it starts its own (and
            // before the CLI loads the stack, which a half-written backend file would fail).
            for (const line of this.clearDeadRuns()) this.onNotice(line);
            const stack = await this.open();
            // A writer finishes what a killed run left pending before it starts (not only `serve` at
            // start-up): an `up` on top of pending creates would leave them for a later recovery to undo
            // after this run recorded the same names. Cheap when state shows none.
            let dep = await this.readDeployment();
            if (kind !== "preview" && dep.pending_operations?.length) {
                for (const line of await this.finishPending(stack, this.onNotice, dep)) this.onNotice(line);
                dep = await this.readDeployment();
            }
            // An upgrade: an earlier release's shapes are handed over before the program runs (hand-over.ts).
            if (
                kind === "up" &&
                (await handOverBeforeUp(stack, dep.resources ?? [], opts, this.onNotice, () =>
                    wantedMembers(this.workDir, this.stackName, this.countsInUse()),
                ))
            )
                dep = await this.readDeployment();
            // Read after recovery (which may have changed state): the program proposes what state says now.
            this.proposed = await this.readInstallation(dep);
            this.programScope = kind === "up" ? memberScope(opts, dep) : undefined;
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
            const controller = (this.running = new AbortController());
            try {
                await clearingDeadLocks(stack, this.onNotice, () =>
                    run(withoutReadback(stack), onEvent, controller.signal),
                );
            } catch (e) {
                throw this.engineError(kind, e, diagnostics, controller.signal.aborted);
            } finally {
                this.running = undefined;
                this.programScope = undefined;
            }
            if (kind !== "preview") await this.prune();
            const proxies = kind === "up" ? await this.outputProxies(stack) : undefined;
            return { kind, changes, durationMs: Date.now() - started, ...(proxies ? { proxies } : {}) };
        });
    }

    /** What an operation's failure is, for the caller: locked, cancelled, wrong passphrase, backend down, or the engine's lines. */
    private engineError(kind: OperationKind, e: unknown, diagnostics: string[], aborted: boolean): Error {
        if (e instanceof ConcurrentUpdateError) {
            const holders = stackLocks(this.backendDir(), this.stackName).map((l) => `pid ${l.pid}@${l.hostname}`);
            return new EngineError(
                kind,
                `another update holds the stack lock (${holders.join(", ") || "unknown holder"}); wait for it — a lock whose process died is removed by the next egress command`,
                e,
            );
        }
        if (aborted) return new EngineError(kind, "cancelled on request; the engine saved what it had done", e, true);
        if (isIncorrectPassphrase(e)) return new PassphraseMismatchError(this.stackFileForHumans(), this.stackName);
        const backendDown = classifyBackendError(e, this.backend);
        if (backendDown instanceof BackendUnreachableError)
            return new EngineError(kind, backendDown.message, backendDown);
        const detail = diagnostics.length ? diagnostics.join("\n") : lastLines((e as Error).message, 8);
        return new EngineError(kind, detail, e);
    }

    /**
     * The stack output `proxies` an `up` just wrote, read from the checkpoint (a file backend's file, else
     * one export); the engine's own `stack output` only when state does not hold it in the clear.
     */
    private async outputProxies(stack: Stack): Promise<ProxyMember[]> {
        const fromState = rootProxies((await this.readDeployment()).resources ?? []);
        if (fromState) return fromState;
        return ((await stack.outputs()).proxies?.value as ProxyMember[] | undefined) ?? [];
    }

    /** History past the bound (history-prune.ts), after every write; a failure is a note, never the operation's. */
    private async prune(): Promise<void> {
        try {
            await pruneHistory(this.backend, this.stackName);
        } catch (e) {
            this.onNotice(
                `pruning the stack's history in ${this.backend.shown} failed: ${classifyBackendError(e, this.backend) as Error}`,
            );
        }
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
