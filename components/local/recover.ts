import { findProxyProcesses, proxyInstallation, stopProxy } from "./process";
import { ForeignInstallationError, Installation, ownedBy } from "../../src/model";
import type { LocalProcessInputs } from "./provider";
export { LOCAL_PROCESS_TYPE } from "./provider";

/**
 * Undoes a create a killed engine run started but never recorded: the process ID is the member name
 * (provider.ts), so whatever runs under it in this state dir is that create's, and is stopped.
 */
export async function undoLocalCreate(inputs: Record<string, unknown>, installation: Installation): Promise<string[]> {
    const { member, stateDir } = inputs as Partial<LocalProcessInputs>;
    if (typeof member !== "string" || typeof stateDir !== "string") return [];
    // Only our installation's process is that create's; another's with the same id stays, and is named.
    const all = findProxyProcesses(stateDir, member);
    const foreign = all.filter((pid) => !ownedBy(proxyInstallation(pid), installation));
    if (foreign.length)
        throw new ForeignInstallationError(
            `local proxy ${member} (pid ${foreign.join(", ")}) in ${stateDir}`,
            installation.id,
            proxyInstallation(foreign[0]),
        );
    const pids = all;
    for (const pid of pids) await stopProxy(pid, member, stateDir);
    // Files of a process that died on its own are cleaned too (stopProxy of a dead pid only removes them).
    if (!pids.length) await stopProxy(-1, member, stateDir);
    return pids.map((pid) => `stopped local proxy ${member} (pid ${pid})`);
}
