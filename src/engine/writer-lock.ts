import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { describeHolder, identityAlive, ProcessIdentity, selfIdentity } from "./process-identity";
import { type CatalogueEntry, EXIT } from "../model/error-catalogue";

/** Who holds a stack's writer lock, as stored in the lock file. */
export interface LockHolder extends ProcessIdentity {
    /** What the holder runs: `egress up`, `egress scale web 5`, `egress serve`. */
    command: string;
    /** ISO time the lock was taken. */
    since: string;
}

/**
 * The writer lock of a stack was held by a live process for longer than the caller would wait.
 * `holder` names it so the message can say whom to wait for.
 */
export class WriterLockBusyError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "WriterLockBusyError" };
    }
    constructor(
        readonly stack: string,
        readonly holder: LockHolder,
        waitedMs: number,
    ) {
        super(
            `stack ${stack} is being changed by ${describeHolder(holder)}; waited ${Math.round(waitedMs / 1000)}s for its writer lock (--lock-wait to wait longer)`,
        );
        this.name = "WriterLockBusyError";
    }
}

/** A held writer lock. `release` is idempotent and never removes a lock another process took since. */
export interface WriterLock {
    file: string;
    holder: LockHolder;
    release(): void;
}

export interface AcquireOptions {
    /** The egress home's run dir (engineHome().runDir, or the service's runDir). */
    runDir: string;
    stack: string;
    command: string;
    /** How long to wait for a live holder; 0 tries once. */
    waitMs: number;
    /** @default 100 */
    pollMs?: number;
    /** Called when waiting starts and whenever the live holder changes. */
    onWait?: (holder: LockHolder) => void;
    /** Called after a dead holder's lock was removed (the caller logs it). */
    onStale?: (holder: LockHolder) => void;
    /** Aborting stops the wait (a service shutting down). */
    signal?: AbortSignal;
}

/**
 * The one lock every writer of a stack takes before writing its stack file and holds through the engine
 * operation: `<runDir>/locks/<stack>.lock`. Lives beside the run dir's other per-stack state (journal,
 * service announcement, local proxy state), so a CLI and a service that share a run dir share the lock.
 */
export function writerLockFile(runDir: string, stack: string): string {
    return path.join(runDir, "locks", `${stack}.lock`);
}

/** The lock file as found: its holder (undefined content = unreadable, which counts as stale) and liveness. */
export function inspectWriterLock(
    runDir: string,
    stack: string,
): { file: string; holder: LockHolder; alive: boolean } | undefined {
    const file = writerLockFile(runDir, stack);
    const found = readLock(file);
    return found && { file, holder: found.holder, alive: holderAlive(found.holder) };
}

export async function acquireWriterLock(o: AcquireOptions): Promise<WriterLock> {
    const file = writerLockFile(o.runDir, o.stack);
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const holder: LockHolder = { ...selfIdentity(), command: o.command, since: new Date().toISOString() };
    const started = Date.now();
    let lastSeen: string | undefined;
    for (;;) {
        o.signal?.throwIfAborted();
        if (tryCreate(file, holder)) return { file, holder, release: () => release(file, holder) };
        const found = readLock(file);
        if (!found) continue; // released between our attempt and the read: try again at once
        if (!holderAlive(found.holder)) {
            const removed = removeIfStale(file, found.ino);
            if (removed) {
                o.onStale?.(removed);
                continue;
            }
        } else {
            if (Date.now() - started >= o.waitMs)
                throw new WriterLockBusyError(o.stack, found.holder, Date.now() - started);
            const key = `${found.holder.pid}:${found.holder.since}`;
            if (key !== lastSeen) o.onWait?.(found.holder);
            lastSeen = key;
        }
        await sleep(Math.max(1, Math.min(o.pollMs ?? 100, o.waitMs - (Date.now() - started))), o.signal);
    }
}

function holderAlive(h: LockHolder): boolean {
    return h.pid > 0 && identityAlive(h);
}

/** Complete-or-absent: the content is written to a private temp file, then hard-linked into place (fails if taken). */
function tryCreate(file: string, holder: LockHolder): boolean {
    const tmp = `${file}.${process.pid}.${crypto.randomBytes(4).toString("hex")}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(holder) + "\n", { mode: 0o600 });
    try {
        fs.linkSync(tmp, file);
        return true;
    } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
        throw e;
    } finally {
        fs.rmSync(tmp, { force: true });
    }
}

/** The lock's holder and inode; an unreadable file is reported with pid 0 (stale: nobody can own it). */
function readLock(file: string): { holder: LockHolder; ino: number } | undefined {
    let fd: number;
    try {
        fd = fs.openSync(file, "r");
    } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw e;
    }
    try {
        const ino = fs.fstatSync(fd).ino;
        const text = fs.readFileSync(fd, "utf8");
        try {
            const h = JSON.parse(text) as LockHolder;
            if (typeof h.pid === "number" && typeof h.hostname === "string") return { holder: h, ino };
        } catch {
            /* fall through: unreadable */
        }
        return {
            holder: {
                pid: 0,
                hostname: "?",
                command: `unreadable lock file (${JSON.stringify(text.slice(0, 40))})`,
                since: "?",
            },
            ino,
        };
    } finally {
        fs.closeSync(fd);
    }
}

/**
 * Removes the lock file with inode `ino` if its holder is still dead. Two processes may find the same
 * stale lock; the short-lived `.break` file makes the check-and-unlink one step, so neither can remove
 * a lock the other took in between. A `.break` older than 10 s was left by a killed breaker.
 */
function removeIfStale(file: string, ino: number): LockHolder | undefined {
    const breaker = `${file}.break`;
    try {
        fs.writeFileSync(breaker, String(process.pid), { flag: "wx", mode: 0o600 });
    } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
        try {
            if (Date.now() - fs.statSync(breaker).mtimeMs > 10_000) fs.rmSync(breaker, { force: true });
        } catch {
            /* gone already */
        }
        return undefined;
    }
    try {
        const now = readLock(file);
        if (!now || now.ino !== ino || holderAlive(now.holder)) return undefined;
        fs.unlinkSync(file);
        return now.holder;
    } finally {
        fs.rmSync(breaker, { force: true });
    }
}

function release(file: string, holder: LockHolder): void {
    const found = readLock(file);
    if (
        found &&
        found.holder.pid === holder.pid &&
        found.holder.since === holder.since &&
        found.holder.startTime === holder.startTime
    )
        fs.rmSync(file, { force: true });
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
        const t = setTimeout(done, ms);
        function done() {
            signal?.removeEventListener("abort", abort);
            resolve();
        }
        function abort() {
            clearTimeout(t);
            reject(signal!.reason);
        }
        signal?.addEventListener("abort", abort, { once: true });
    });
}
