/**
 * What starting a local member takes and gives, shared by the one-process path (process.ts) and the
 * shared hosts (hosts.ts) without an import circle between them.
 */
import type { Installation } from "../../src/model/installation";

export interface StartRequest {
    id: string;
    /** Port to bind; 0 lets the kernel choose a free one. */
    port: number;
    stateDir: string;
    serverScript: string;
    nodePath: string;
    /** Credentials the proxy requires; handed over in a 0600 file the proxy reads and removes at start. */
    auth?: { username: string; password: string };
    /**
     * The stack's installation: carried in the proxy's argv and ready file. A running proxy with this id but
     * another installation is never stopped: the start fails naming both. Unset: no check (tests only).
     */
    installation?: Installation;
    /** More than 1: the member shares a host process with up to this many (hosts.ts). Unset: a process of its own. */
    membersPerProcess?: number;
}

export interface Started {
    pid: number;
    port: number;
}

/**
 * Spawns a detached proxy process (one member's or a shared host's) that outlives the engine run, its
 * output appended to `logFile`. The child's handle is unref'd: nothing here waits for it.
 */
export function spawnDetached(
    nodePath: string,
    argv: string[],
    logFile: string,
): import("node:child_process").ChildProcess {
    const fs = require("node:fs") as typeof import("node:fs");
    const cp = require("node:child_process") as typeof import("node:child_process");
    const out = fs.openSync(logFile, "a");
    const child = cp.spawn(nodePath, argv, {
        detached: true,
        stdio: ["ignore", out, out],
        // Allow-listed: the engine's environment (Pulumi settings, cloud credentials) is none of a proxy's business.
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: process.env.LANG ?? "C.UTF-8" },
    });
    fs.closeSync(out);
    child.unref();
    return child;
}
