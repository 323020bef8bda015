/**
 * What `egress doctor` asks of the Pulumi backend in effect: which one it is (the URL without its password),
 * whether it answers, and the stack's Pulumi locks whose holder is a dead process of this host. Read-only:
 * the next operation clears a dead lock (locks.ts for files, backend-locks.ts otherwise).
 */
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { stateBackend, type BackendKind } from "./backend";
import { engineEnv, type EngineHome } from "./env";
import { childEnv } from "./child-env";
import { stackLocks } from "./locks";
import { postgresLockRows } from "./postgres-state";
import { identityAlive } from "./process-identity";
import { maskUrlPasswords } from "../log/redact";

export interface BackendLock {
    /** A file path or a row key. */
    where: string;
    pid?: number;
    hostname?: string;
    alive: boolean;
}

export interface BackendReport {
    kind: BackendKind;
    /** The URL with its password masked. */
    shown: string;
    reachable: boolean;
    /** Why it is not reachable (masked), or how it was checked. */
    detail: string;
    /** The stack's Pulumi locks; undefined where egress cannot list them (object stores, Pulumi Cloud). */
    locks?: BackendLock[];
}

/** A lock whose holder cannot be named counts as alive: doctor never calls a lock dead on a guess. */
function lockOf(where: string, pid: number | undefined, hostname: string | undefined): BackendLock {
    return { where, pid, hostname, alive: !pid || !hostname || identityAlive({ pid, hostname }) };
}

export async function inspectBackend(home: EngineHome, stack: string): Promise<BackendReport> {
    const b = stateBackend(home);
    const mask = (s: string) => maskUrlPasswords(s).split(b.url).join(b.shown);
    if (b.kind === "file") {
        const dir = b.fileDir!;
        try {
            fs.mkdirSync(dir, { recursive: true });
            fs.accessSync(dir, fs.constants.W_OK);
        } catch (e) {
            return { kind: b.kind, shown: b.shown, reachable: false, detail: (e as Error).message };
        }
        const locks = stackLocks(dir, stack).map((l) => ({ ...lockOf(l.file, l.pid, l.hostname), alive: l.alive }));
        return { kind: b.kind, shown: b.shown, reachable: true, detail: "a writable directory", locks };
    }
    if (b.kind === "postgres") {
        try {
            const rows = await postgresLockRows(b.url, stack);
            return {
                kind: b.kind,
                shown: b.shown,
                reachable: true,
                detail: "answers (connected and queried)",
                locks: rows.map((r) => lockOf(r.key, r.pid, r.hostname)),
            };
        } catch (e) {
            return { kind: b.kind, shown: b.shown, reachable: false, detail: mask((e as Error).message) };
        }
    }
    // An object store (or Pulumi Cloud): the engine opens it with its own credentials chain.
    const r = cp.spawnSync(path.join(home.binDir, "pulumi"), ["stack", "ls", "--json", "--non-interactive"], {
        env: { ...childEnv(process.env), ...engineEnv(home) },
        encoding: "utf8",
        timeout: 60_000,
    });
    const ok = r.status === 0;
    const why = (r.stderr || r.error?.message || `exit ${r.status ?? r.signal}`).trim().split("\n").slice(-3).join(" ");
    return {
        kind: b.kind,
        shown: b.shown,
        reachable: ok,
        detail: ok ? "answers (`pulumi stack ls`)" : mask(why),
    };
}
