import * as fs from "node:fs";
import * as os from "node:os";

/**
 * A process as other processes can recognise it later: pid alone is not enough, because pids are
 * reused; the kernel's start time of the process (field 22 of /proc/<pid>/stat, clock ticks since
 * boot) tells a reused pid from the original.
 */
export interface ProcessIdentity {
    pid: number;
    /** Undefined where /proc is not available; then only the pid is checked. */
    startTime?: string;
    hostname: string;
}

/** The fields of /proc/<pid>/stat after field 2 (comm), from field 3 on; undefined when the process or /proc is missing. */
function statFields(pid: number): string[] | undefined {
    let stat: string;
    try {
        stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
        return undefined;
    }
    // Field 2 (comm) is in parentheses and may hold spaces: count fields after the last ')'.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** Field 22 (starttime) of /proc/<pid>/stat, or undefined when the process or /proc is missing. */
export function processStartTime(pid: number): string | undefined {
    return statFields(pid)?.[22 - 3];
}

export function selfIdentity(): ProcessIdentity {
    return { pid: process.pid, startTime: processStartTime(process.pid), hostname: os.hostname() };
}

/**
 * Holders on other hosts known to be gone: the lock holders a replica found when it took the lead of a
 * stack on a shared backend, once the previous holders' engines must have ended (service/start/
 * foreign-engines.ts). Only the leader marks them, and it forgets them when it stops leading.
 */
const goneElsewhere = new Set<string>();
const elsewhereKey = (id: { pid: number; hostname: string }) => `${id.pid}@${id.hostname}`;

/** Counts these holders on other hosts as gone from now on (see goneElsewhere). */
export function markGoneElsewhere(ids: { pid: number; hostname: string }[]): void {
    for (const id of ids) goneElsewhere.add(elsewhereKey(id));
}

/** Counts every holder on another host as alive again (this replica stopped leading). */
export function forgetGoneElsewhere(): void {
    goneElsewhere.clear();
}

/**
 * The one liveness rule of the engine layer (locks, writer lock, leftover engines).
 * False only when the process is provably gone: same host, and the pid is free, belongs to a process
 * that exited and awaits its parent's wait (a zombie), or now belongs to a process that started at
 * another time. A holder on another host cannot be checked and counts as alive, unless the leader
 * marked it gone (markGoneElsewhere).
 */
export function identityAlive(id: ProcessIdentity): boolean {
    if (id.hostname !== os.hostname()) return !goneElsewhere.has(elsewhereKey(id));
    try {
        process.kill(id.pid, 0);
    } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EPERM") return false;
    }
    const stat = statFields(id.pid);
    // Exited but not reaped by its parent yet (state Z, or X while it goes): pid and start time are still
    // there, but it holds no file and never runs again. A parent that does not wait (a test runner blocked
    // in spawnSync, a careless supervisor) must not make its killed child look like a lock's live holder.
    if (stat?.[0] === "Z" || stat?.[0] === "X") return false;
    const now = stat?.[22 - 3];
    return !(id.startTime && now && now !== id.startTime);
}

/** `pid 123 (egress up) on host, since …`: how messages name a holder. */
export function describeHolder(h: ProcessIdentity & { command?: string; since?: string }): string {
    return `pid ${h.pid}${h.command ? ` (${h.command})` : ""}${h.hostname !== os.hostname() ? ` on ${h.hostname}` : ""}${h.since ? ` since ${h.since}` : ""}`;
}
