import { findProxyProcesses, stopProxy } from "./process";
import type { LocalProcessInputs } from "./provider";

/** Type token of the LocalProxyProcess dynamic resource (`pulumi-nodejs:dynamic/<module>:<type>`). */
export const LOCAL_PROCESS_TYPE = "pulumi-nodejs:dynamic/egress:local:Process";

/**
 * Undoes a create a killed engine run started but never recorded: the process ID is the member name
 * (provider.ts), so whatever runs under it in this state dir is that create's, and is stopped.
 */
export async function undoLocalCreate(inputs: Record<string, unknown>): Promise<string[]> {
    const { member, stateDir } = inputs as Partial<LocalProcessInputs>;
    if (typeof member !== "string" || typeof stateDir !== "string") return [];
    const pids = findProxyProcesses(stateDir, member);
    for (const pid of pids) await stopProxy(pid, member, stateDir);
    // Files of a process that died on its own are cleaned too (stopProxy of a dead pid only removes them).
    if (!pids.length) await stopProxy(-1, member, stateDir);
    return pids.map((pid) => `stopped local proxy ${member} (pid ${pid})`);
}
