import * as fs from "node:fs";
import * as path from "node:path";
import { identityAlive } from "./process-identity";

/** A lock file of the file ("diy") backend: `<backend>/.pulumi/locks/<org>/<project>/<stack>/<id>.json`. */
export interface StackLock {
    file: string;
    pid: number;
    hostname: string;
    /** False when the holder is on this host and its process is gone. Locks of other hosts count as live. */
    alive: boolean;
}

/** Lock files held on `stack` in a file backend (`backendDir` = the path of a file:// URL). */
export function stackLocks(backendDir: string | undefined, stack: string): StackLock[] {
    if (!backendDir) return [];
    const root = path.join(backendDir, ".pulumi", "locks");
    if (!fs.existsSync(root)) return [];
    const locks: StackLock[] = [];
    for (const rel of fs.readdirSync(root, { recursive: true }) as string[]) {
        if (!rel.endsWith(".json") || path.basename(path.dirname(rel)) !== stack) continue;
        const file = path.join(root, rel);
        try {
            const lock = JSON.parse(fs.readFileSync(file, "utf8")) as { pid: number; hostname: string };
            locks.push({
                file,
                pid: lock.pid,
                hostname: lock.hostname,
                alive: identityAlive({ pid: lock.pid, hostname: lock.hostname }),
            });
        } catch {
            /* unreadable or vanished: the backend's own check will report it */
        }
    }
    return locks;
}

/**
 * Removes the locks whose holder process is gone — and only those. (`pulumi cancel` on a file backend
 * deletes every lock file, a live holder's too, so it is not used here.) Returns the removed locks.
 */
export function removeStaleLocks(backendDir: string | undefined, stack: string): StackLock[] {
    const stale = stackLocks(backendDir, stack).filter((l) => !l.alive);
    for (const l of stale) {
        fs.rmSync(l.file, { force: true });
        // The file backend writes a `<file>.attrs` sidecar beside each lock; a crash leaves it behind too.
        fs.rmSync(`${l.file}.attrs`, { force: true });
    }
    removeOrphanAttrs(backendDir, stack);
    return stale;
}

/** `.attrs` sidecars whose lock file is gone (left by crashes before this cleanup existed). */
function removeOrphanAttrs(backendDir: string | undefined, stack: string): void {
    if (!backendDir) return;
    const root = path.join(backendDir, ".pulumi", "locks");
    if (!fs.existsSync(root)) return;
    for (const rel of fs.readdirSync(root, { recursive: true }) as string[]) {
        if (!rel.endsWith(".json.attrs") || path.basename(path.dirname(rel)) !== stack) continue;
        const file = path.join(root, rel);
        if (!fs.existsSync(file.slice(0, -".attrs".length))) fs.rmSync(file, { force: true });
    }
}
