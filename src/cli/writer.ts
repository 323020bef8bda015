import { acquireWriterLock, describeHolder, engineHome, liveLockHolders, stateBackend } from "../engine";
import { awaitForeignEngines } from "../state/cluster/foreign-engines";
import { ConfigError } from "../config";
import { createLogger } from "../log/logger";
import { describeAdopted, StoreDesired } from "../state/cluster/desired";
import { stackPrefix } from "../state/cluster/records";
import { StoreUnavailableError } from "../state/redis/unavailable";
import { EXIT, GlobalOptions, projectDir, UsageError } from "./context";
import { holdStoreLock, storeUrlOf } from "./store-lock";
import { engineKillGraceMs, lockLoss, lockLossSignal } from "./lock-loss";

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

/** Releases of the locks held now, for an exit that cannot unwind (a second Ctrl-C): see `exitReleasing`. */
const held = new Set<() => Promise<void>>();

/**
 * Exits with `code` after giving up the locks held in the store (at most 1 s: the store may be away,
 * and then the lock runs out by its TTL). The file lock needs nothing: a dead holder's is cleared.
 */
export async function exitReleasing(code: number): Promise<never> {
    const cap = new Promise((r) => setTimeout(r, 1000).unref());
    await Promise.race([Promise.allSettled([...held].map((r) => r())), cap]);
    process.exit(code);
}

/**
 * Runs `fn` holding the stack's writer lock (src/engine/writer-lock.ts), the one every writer takes: CLI
 * up/scale/refresh/destroy and the service's operations. Says on stderr whom it waits for and which dead
 * holder's lock it cleared; releases on success and on every error.
 *
 * With a store (`--store` / $EGRESS_STORE) the stack's lock in the store is taken first (store-lock.ts):
 * the replicas' leader lock, which machines share where the file lock is one machine's. The same order
 * as a replica (leader lock, then the file lock per operation), so the two never wait on each other
 * crosswise. An unreachable store fails the command (exit 75): it never falls back to the file lock alone.
 * The store's lock found another's while `fn` runs stops its engine runs (lock-loss.ts) and fails the
 * command with that LockLostError (exit 4), whatever `fn` ended with.
 */
export async function withWriterLock<T>(opts: GlobalOptions, command: string, fn: () => Promise<T>): Promise<T> {
    const waitMs = lockWaitMs(opts);
    const started = Date.now();
    const url = storeUrlOf(opts);
    const store = url ? await holdStoreLock(url, opts, command, waitMs) : undefined;
    const heldSince = Date.now();
    if (store) held.add(store.release);
    // Ctrl-C while waiting for the file lock, or outside an engine run (which cancels safely on its own,
    // operations.ts `cancellable`): give the store's lock up before exiting rather than leave it to its TTL.
    const onSignal = (sig: NodeJS.Signals) => {
        if (sig === "SIGINT" && process.listenerCount("SIGINT") > 1) return;
        void exitReleasing(sig === "SIGINT" ? EXIT.interrupted : 143);
    };
    if (store) for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, onSignal);
    try {
        if (store) await awaitPreviousHolder(opts, heldSince);
        const result = await underFileLock(opts, command, waitMs - (Date.now() - started), url, store?.id, fn);
        // Lost while it ran: even a run that ended well ran beside the new holder for a while.
        const lost = lockLoss();
        if (lost) throw lost;
        return result;
    } catch (e) {
        // Whatever the cut-off run failed with (cancelled, refused, ended), the loss is why.
        throw lockLoss() ?? e;
    } finally {
        if (store) {
            for (const sig of ["SIGINT", "SIGTERM"] as const) process.off(sig, onSignal);
            held.delete(store.release);
            await store.release();
        }
    }
}

/**
 * Holding the store's lock, a command counts the Pulumi locks of the previous holder on another host (a
 * replica or a command that died) gone once their engine must have ended (src/state/cluster/foreign-engines.ts),
 * so its own run clears them. Throws the loss when the store's lock was lost meanwhile.
 */
async function awaitPreviousHolder(opts: GlobalOptions, heldSince: number): Promise<void> {
    const ok = await awaitForeignEngines({
        holders: () => liveLockHolders(stateBackend(engineHome()), opts.stack),
        leadingSince: () => (lockLoss() ? undefined : heldSince),
        graceMs: engineKillGraceMs(opts),
        notice: (line) => process.stderr.write(`${line}\n`),
    });
    if (!ok) throw lockLoss() ?? new Error("lost the stack's lock in the store");
}

/** The file lock, then `fn` (with the store's desired counts when the command holds the store's lock). */
async function underFileLock<T>(
    opts: GlobalOptions,
    command: string,
    waitMs: number,
    url: string | undefined,
    storeId: string | undefined,
    fn: () => Promise<T>,
): Promise<T> {
    const lock = await acquireWriterLock({
        runDir: engineHome().runDir,
        stack: opts.stack,
        command,
        waitMs: Math.max(0, waitMs),
        // A lost store lock ends the wait: the command would only be refused its engine run after it.
        signal: lockLossSignal,
        onWait: (h) =>
            process.stderr.write(`waiting for stack ${opts.stack}: ${describeHolder(h)} holds its writer lock\n`),
        onStale: (h) =>
            process.stderr.write(
                `cleared a stale writer lock of stack ${opts.stack}: ${describeHolder(h)} is no longer running\n`,
            ),
    });
    try {
        if (!url || !storeId) return await fn();
        return await withStoreDesired(url, storeId, opts, fn);
    } finally {
        lock.release();
    }
}

/**
 * With a store, the stack's desired counts live there (state/cluster/desired.ts): a command holding the
 * stack's lock first takes them into the stack file (saying which counts changed), so it applies what
 * was asked last rather than an older copy of the file, and records the file's counts when it ends, so
 * the next leader applies what this command left. A store that cannot be read fails the command (75).
 */
async function withStoreDesired<T>(url: string, self: string, opts: GlobalOptions, fn: () => Promise<T>): Promise<T> {
    const dir = projectDir(opts);
    const desired = new StoreDesired({
        url,
        prefix: stackPrefix(opts.stack),
        self,
        log: createLogger({ level: "silent" }),
    });
    try {
        try {
            const adopted = await desired.takeOver(dir, opts.stack);
            for (const line of describeAdopted(adopted, opts.stack)) process.stderr.write(line + "\n");
        } catch (e) {
            if (!(e instanceof ConfigError))
                // the stack file's own problem is the command's to report
                throw new StoreUnavailableError(
                    `the desired counts in the store could not be read: ${(e as Error).message}`,
                    2,
                );
        }
        try {
            return await fn();
        } finally {
            // Not once the lock is another's: the counts in the store are the new holder's to record.
            if (!lockLoss()) await recordFileCounts(desired, dir, opts.stack);
        }
    } finally {
        desired.close();
    }
}

/** Records what the stack file says now, waiting at most 2 s for the store; says so when it could not. */
async function recordFileCounts(desired: StoreDesired, dir: string, stack: string): Promise<void> {
    try {
        desired.recordFile(dir, stack);
    } catch {
        return; // a stack file that cannot be read holds no counts to record
    }
    const cap = new Promise<never>((_, no) => setTimeout(() => no(new Error("no answer within 2 s")), 2000).unref());
    await Promise.race([desired.flushed(), cap]).catch((e) =>
        process.stderr.write(
            `WARNING: the stack file's counts could not be recorded in the store (${(e as Error).message}); the next leader applies the counts the store had\n`,
        ),
    );
}
