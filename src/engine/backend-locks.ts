/**
 * Stale Pulumi stack locks in a backend whose locks are not files (PostgreSQL, object stores). A
 * killed `up` leaves its lock blob behind, and every later update then fails with "the stack is
 * currently locked by 1 lock(s)", which names each holder: `created by user@host (pid N)`. When every
 * holder it names is a process of this host that is gone, the locks are dead and `pulumi cancel` (which
 * deletes every lock of the stack) removes them. A holder on another host counts as alive: egress
 * cannot see it, and it may be running.
 */
import type { Stack } from "@pulumi/pulumi/automation";
import { ConcurrentUpdateError } from "@pulumi/pulumi/automation/errors";
import type { StateBackend } from "./backend";
import { stackLocks } from "./locks";
import { postgresLockRows } from "./postgres-state";
import { identityAlive } from "./process-identity";

const HOLDER = /created by \S*?@(\S+) \(pid (\d+)\)/g;

/** The holders a ConcurrentUpdateError's text names. */
export function lockHoldersIn(text: string): { hostname: string; pid: number }[] {
    return [...text.matchAll(HOLDER)].map((m) => ({ hostname: m[1], pid: Number(m[2]) }));
}

/**
 * The holders of the stack's locks that may be running, in the backends egress can list: lock files, and
 * a PostgreSQL backend's lock rows (one query). A row that names no holder counts as live (nothing
 * proves it dead). An object store's locks cannot be listed: none are known, and the engine's own lock
 * check (clearingDeadLocks) is all there is. Recovery asks this before it undoes anything: a live holder
 * (another replica's `up`, on another host) is making those pending creates right now.
 */
export async function liveLockHolders(
    backend: StateBackend,
    stack: string,
): Promise<{ pid?: number; hostname?: string }[]> {
    if (backend.kind === "file") return stackLocks(backend.fileDir, stack).filter((l) => l.alive);
    if (backend.kind !== "postgres") return [];
    const rows = await postgresLockRows(backend.url, stack);
    return rows.filter((r) => !r.pid || !r.hostname || identityAlive({ pid: r.pid, hostname: r.hostname }));
}

/**
 * Runs `run`; when it fails because of locks whose holders are all dead processes of this host,
 * removes those locks (`pulumi cancel`), says so, and runs it once more. Any other failure, or a lock
 * with a live (or unknowable) holder, is thrown as it is.
 */
export async function clearingDeadLocks<T>(
    stack: Stack,
    onNotice: (line: string) => void,
    run: () => Promise<T>,
): Promise<T> {
    try {
        return await run();
    } catch (e) {
        if (!(e instanceof ConcurrentUpdateError)) throw e;
        const holders = lockHoldersIn(`${(e as { stderr?: string }).stderr ?? ""}\n${e.message}`);
        if (!holders.length || holders.some((h) => identityAlive(h))) throw e;
        await stack.cancel();
        onNotice(
            `removed ${holders.length} stale lock(s) of the stack in the backend, left by dead pid(s) ${holders.map((h) => h.pid).join(", ")}`,
        );
        return run();
    }
}
