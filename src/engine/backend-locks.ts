/**
 * Stale Pulumi stack locks in a backend egress cannot list itself (PostgreSQL, object stores). A
 * killed `up` leaves its lock blob behind, and every later update then fails with "the stack is
 * currently locked by 1 lock(s)", which names each holder: `created by user@host (pid N)`. When every
 * holder it names is a process of this host that is gone, the locks are dead and `pulumi cancel` (which
 * deletes every lock of the stack) removes them. A holder on another host counts as alive: egress
 * cannot see it, and it may be running.
 */
import { ConcurrentUpdateError, type Stack } from "@pulumi/pulumi/automation";
import { identityAlive } from "./process-identity";

const HOLDER = /created by \S*?@(\S+) \(pid (\d+)\)/g;

/** The holders a ConcurrentUpdateError's text names. */
export function lockHoldersIn(text: string): { hostname: string; pid: number }[] {
    return [...text.matchAll(HOLDER)].map((m) => ({ hostname: m[1], pid: Number(m[2]) }));
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
