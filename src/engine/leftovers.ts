import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import { identityAlive, processStartTime } from "./process-identity";

/**
 * Every engine process carries `EGRESS_ENGINE_RUN=<owner pid>.<owner start time>.<nonce>` in its
 * environment (set by supervised.ts, inherited by the CLI's plugins). The supervisor kills marked
 * processes when their owner dies; if the supervisor itself was killed, the next egress command finds
 * them here by that marker (never by a process name) and ends them.
 */
export const MARKER_VAR = "EGRESS_ENGINE_RUN";

/** The marker for engine processes started by this process. */
export function newRunMarker(): string {
    return `${process.pid}.${processStartTime(process.pid) ?? "0"}.${crypto.randomBytes(4).toString("hex")}`;
}

/** True when the process that owns `marker` still runs (same pid and start time: process-identity.ts's one rule). */
function ownerAlive(marker: string): boolean {
    const [pid, start] = marker.split(".");
    return identityAlive({ pid: Number(pid), startTime: start === "0" ? undefined : start, hostname: os.hostname() });
}

export interface Leftover {
    pid: number;
    /** The dead owner's marker. */
    marker: string;
    command: string;
}

/** Engine processes on this host whose owner is gone. */
export function findLeftovers(): Leftover[] {
    const out: Leftover[] = [];
    for (const entry of fs.readdirSync("/proc")) {
        if (!/^\d+$/.test(entry)) continue;
        const pid = Number(entry);
        if (pid === process.pid) continue;
        let environ: string;
        try {
            environ = fs.readFileSync(`/proc/${pid}/environ`, "utf8");
        } catch {
            continue; // gone, or not ours to read
        }
        const hit = environ.split("\0").find((kv) => kv.startsWith(`${MARKER_VAR}=`));
        if (!hit) continue;
        const marker = hit.slice(MARKER_VAR.length + 1);
        if (ownerAlive(marker)) continue;
        let command = "";
        try {
            command = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).slice(0, 3).join(" ");
        } catch {
            /* exited meanwhile */
        }
        out.push({ pid, marker, command });
    }
    return out;
}

/** Kills the engine processes of dead runs; returns what it killed (for the log). */
export function killLeftovers(): Leftover[] {
    const found = findLeftovers();
    for (const l of found) {
        try {
            process.kill(l.pid, "SIGKILL");
        } catch {
            /* exited meanwhile */
        }
    }
    return found;
}
