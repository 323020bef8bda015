import { acquireWriterLock, describeHolder, engineHome } from "../engine";
import { GlobalOptions, UsageError } from "./context";

/** Default for `--lock-wait`: long enough for a typical scale of local or cloud members to finish. */
export const DEFAULT_LOCK_WAIT_SECONDS = 120;

/** `--lock-wait` (or $EGRESS_LOCK_WAIT) in milliseconds. */
export function lockWaitMs(opts: GlobalOptions): number {
    const raw = opts.lockWait ?? process.env.EGRESS_LOCK_WAIT ?? String(DEFAULT_LOCK_WAIT_SECONDS);
    const s = Number(raw);
    if (!Number.isFinite(s) || s < 0)
        throw new UsageError(`--lock-wait must be a number of seconds, 0 or more (got "${raw}")`);
    return s * 1000;
}

/**
 * Runs `fn` holding the stack's writer lock (src/engine/writer-lock.ts), the one every writer takes: CLI
 * up/scale/refresh/destroy and the service's operations. Says on stderr whom it waits for and which dead
 * holder's lock it cleared; releases on success and on every error.
 */
export async function withWriterLock<T>(opts: GlobalOptions, command: string, fn: () => Promise<T>): Promise<T> {
    const lock = await acquireWriterLock({
        runDir: engineHome().runDir,
        stack: opts.stack,
        command,
        waitMs: lockWaitMs(opts),
        onWait: (h) =>
            process.stderr.write(`waiting for stack ${opts.stack}: ${describeHolder(h)} holds its writer lock\n`),
        onStale: (h) =>
            process.stderr.write(
                `cleared a stale writer lock of stack ${opts.stack}: ${describeHolder(h)} is no longer running\n`,
            ),
    });
    try {
        return await fn();
    } finally {
        lock.release();
    }
}
