import type { Logger } from "pino";
import type { VirshCall } from "./virsh-call";

/**
 * The service's debug line for each virsh call its checks make (provider health, the reconcile loop's
 * gone check): `EGRESS_LOG_LEVEL=debug` shows which command ran against which host, how long it took and
 * how it ended. VirshCall holds no arguments or output, so no XML body or key path reaches the log.
 * Undefined without a logger (the session then reports nothing).
 */
export function virshDebugLog(log: Logger | undefined): ((call: VirshCall) => void) | undefined {
    if (!log) return undefined;
    return (call) =>
        log.debug(
            { component: "virsh", ...call },
            `virsh ${call.command} on ${call.host}: ${call.ok ? "ok" : `failed (${call.stage})`}, exit ${call.exitCode ?? call.signal ?? "none"}, ${call.durationMs} ms`,
        );
}
