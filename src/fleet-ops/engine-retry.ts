import type { Logger } from "pino";
import type { EngineError, ProgressEvent } from "../engine";
import { type CatalogueEntry, EXIT } from "../model/error-catalogue";

/**
 * How an operation's engine runs are retried (the one place to change it): while the Pulumi backend does
 * not answer, waits of `backend.firstMs` doubling up to `backend.maxMs`, until the next wait would take
 * the waits of that run past `backend.totalMs`; while another update holds the stack lock, the waits of
 * `lockMs`, one per attempt.
 */
export interface RetryPolicy {
    backend: { firstMs: number; maxMs: number; totalMs: number };
    lockMs: readonly number[];
}

/** A PostgreSQL restart or failover takes seconds: 0.5, 1, 2, 4, 8, 8 … s, for up to 30 s of waiting per run. */
export const RETRY_POLICY: RetryPolicy = {
    backend: { firstMs: 500, maxMs: 8_000, totalMs: 30_000 },
    lockMs: [2, 5, 10, 20, 30].map((s) => s * 1000),
};

/** Thrown when the operation's signal aborted during a wait between attempts: the scaler records it interrupted. */
export class RetryInterrupted extends Error {
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "RetryInterrupted" };
    }
    readonly interrupted = true;
    constructor(why: string, last: Error) {
        super(`${why} while the engine run waited to be retried (${last.message})`);
        this.name = "RetryInterrupted";
    }
}

/** What a retry is for: a backend that did not answer, or someone else's update holding the stack lock. */
export type TransientCause = "backend" | "lock";

/** Why `e` is worth retrying as it is, if it is (engine-errors.ts: EngineError and BackendUnreachableError). */
export function transientCause(e: unknown): TransientCause | undefined {
    const err = e as Partial<EngineError> & { name?: string };
    if (!err || err.transient !== true) return undefined;
    if (err.locked) return "lock";
    return "backend";
}

/**
 * The wait before the next attempt after `attempt` earlier failures of this cause (0-based), or
 * undefined when the policy's bound is reached. `waitedMs`: the backend waits of this run so far.
 */
export function nextWait(
    cause: TransientCause,
    attempt: number,
    waitedMs: number,
    policy: RetryPolicy = RETRY_POLICY,
): number | undefined {
    if (cause === "lock") return policy.lockMs[attempt];
    const { firstMs, maxMs, totalMs } = policy.backend;
    const ms = Math.min(firstMs * 2 ** attempt, maxMs);
    return waitedMs + ms <= totalMs ? ms : undefined;
}

export interface EngineRetryOptions {
    /** Aborted when the operation is cut off (the replica lost the stack's lock, the service stops): no more attempts. */
    signal?: AbortSignal;
    /** Each retry as a progress event of the operation (its journal and event stream). */
    progress?: (e: ProgressEvent) => void;
    /** @default RETRY_POLICY */
    policy?: RetryPolicy;
}

/** Runs one engine run (with what it reads around it), retried while it fails transiently. */
export type EngineRetry = <T>(run: () => Promise<T>) => Promise<T>;

/**
 * The retry of one operation's engine runs (every run of it goes through the same one, so the warning
 * is logged once per operation): a run that fails because the Pulumi backend is unreachable, or because
 * someone else's update holds the stack lock, is run again after a wait (RETRY_POLICY), each retry
 * shown as a progress event. Re-running is safe: nothing was applied when the backend did not answer
 * at the start, and a run cut off mid-update left what any crash leaves (a dead run's lock, pending
 * operations), which the driver clears and finishes before the next run starts (StackDriver.operation:
 * clearingDeadLocks, finishPendingOperations); an `up` then converges to the same desired state.
 * When `signal` aborts, the wait ends and the operation ends interrupted (RetryInterrupted).
 */
export function engineRetry(log: Logger, opts: EngineRetryOptions = {}): EngineRetry {
    const policy = opts.policy ?? RETRY_POLICY;
    let warned = false;
    return async <T>(run: () => Promise<T>): Promise<T> => {
        const attempts: Record<TransientCause, number> = { backend: 0, lock: 0 };
        let waitedMs = 0;
        for (;;) {
            try {
                const result = await run();
                const retries = attempts.backend + attempts.lock;
                if (retries) log.info({ retries, waitedMs }, "the engine run succeeded after retries");
                return result;
            } catch (e) {
                const cause = transientCause(e);
                if (!cause || opts.signal?.aborted) throw e;
                const waitMs = nextWait(cause, attempts[cause], waitedMs, policy);
                if (waitMs === undefined) throw e;
                attempts[cause]++;
                const attempt = attempts.backend + attempts.lock;
                const what = cause === "lock" ? "stack locked by another update" : "backend unreachable";
                const message = `${what}, retrying in ${waitMs} ms (attempt ${attempt}): ${(e as Error).message}`;
                opts.progress?.({ at: new Date().toISOString(), kind: "diagnostic", severity: "warning", message });
                const fields = { attempt, waitMs, error: (e as Error).message };
                const line =
                    cause === "lock"
                        ? "stack locked by another update; retrying"
                        : "the Pulumi backend is unreachable; retrying";
                // Once per operation at warn: every retry shows in its events, and at debug.
                if (warned) log.debug(fields, line);
                else log.warn(fields, line);
                warned = true;
                await wait(waitMs, opts.signal, e as Error);
                if (cause === "backend") waitedMs += waitMs;
            }
        }
    };
}

/** Sleeps `ms`; an abort of `signal` ends it early with RetryInterrupted. */
function wait(ms: number, signal: AbortSignal | undefined, last: Error): Promise<void> {
    return new Promise((resolve, reject) => {
        const onAbort = () => {
            clearTimeout(timer);
            const why = signal?.reason instanceof Error ? signal.reason.message : "the operation was stopped";
            reject(new RetryInterrupted(why, last));
        };
        const timer = setTimeout(() => {
            signal?.removeEventListener("abort", onAbort);
            resolve();
        }, ms);
        signal?.addEventListener("abort", onAbort, { once: true });
    });
}
