import type { StackDriver } from "../engine";
import { GlobalOptions, LockLostError, seconds } from "./context";

/** Default for `--engine-kill-grace` of the writers: the same bound as `egress serve`'s. */
export const DEFAULT_ENGINE_KILL_GRACE_SECONDS = 30;

/** The drivers this command runs the engine with: stopped together when it loses the lock. */
const drivers = new Set<StackDriver>();
const lossController = new AbortController();
let grace = { ms: DEFAULT_ENGINE_KILL_GRACE_SECONDS * 1000, onKilled: () => {} };

/**
 * Aborted once the command lost the stack's lock (its reason the LockLostError): ends its waits (the
 * file lock, a roll's health waits) as Ctrl-C does.
 */
export const lockLossSignal: AbortSignal = lossController.signal;

/** The loss, once the command lost its lock; undefined while it holds it (or holds none). */
export function lockLoss(): LockLostError | undefined {
    return lossController.signal.aborted ? (lossController.signal.reason as LockLostError) : undefined;
}

/** `--engine-kill-grace` (or $EGRESS_ENGINE_KILL_GRACE) in ms: parsed as `serve` parses it. */
export function engineKillGraceMs(opts: GlobalOptions): number {
    const raw =
        opts.engineKillGrace ?? process.env.EGRESS_ENGINE_KILL_GRACE ?? String(DEFAULT_ENGINE_KILL_GRACE_SECONDS);
    return Math.round(seconds("--engine-kill-grace", raw, { min: 1, max: 3600 }) * 1000);
}

/** Sets the grace a lost lock gives the engine run, and what is said if it then has to be ended. */
export function setKillGrace(ms: number, onKilled: () => void): void {
    grace = { ms, onKilled };
}

/**
 * The driver a command runs the engine with (operations.ts): if the command loses its lock, its run is
 * abandoned like a service leader's (StackDriver.abandon); made after the loss, it runs nothing.
 */
export function guarded(driver: StackDriver): StackDriver {
    drivers.add(driver);
    const lost = lockLoss();
    if (lost) driver.refuseRuns(lost);
    return driver;
}

/**
 * The command lost its lock: every driver refuses further engine runs and cancels the one in progress
 * (the engine saves state, as on Ctrl-C), ended after the grace if it has not stopped, so the new holder
 * can count on it being gone; the command's waits end. Returns whether an engine run was in progress.
 */
export function abandonEngineRuns(reason: LockLostError): boolean {
    if (lockLoss()) return false;
    lossController.abort(reason);
    let running = false;
    for (const d of drivers) running = d.abandon(reason, grace.ms, grace.onKilled).engineRunning || running;
    return running;
}
