/**
 * A member's lifecycle as /v1/proxies shows it, from what the service knows: whether it has an address,
 * its health, whether it drains, and the last error that mentions it (a probe's or a failed operation's).
 * Pure, so every rule is tested directly (test/unit/drain-plan.test.ts).
 */
/** A member's health as the probes judge it (declared here, below fleet.ts, which re-exports it). */
export type HealthState = "healthy" | "unhealthy" | "unknown";

export type Lifecycle = "provisioning" | "ready" | "draining" | "failed";

export interface LifecycleFacts {
    hasAddress: boolean;
    draining: boolean;
    health: HealthState;
    /** From the health monitor; `lastError` there outlives recovery, so it counts only while probes fail. */
    probe?: { lastError?: string; consecutiveFailures?: number; lastProbeAt?: number; lastOkAt?: number };
    /** The last failed operation whose error names this member, and when it finished (epoch ms). */
    opError?: { message: string; at: number };
}

/**
 * draining wins (the member is on its way out whatever its health); then healthy → ready and unhealthy →
 * failed. A member without an address or a verdict yet is provisioning, unless an operation failed on it
 * since its last good probe (a create that never came up): failed. `lastError` is the newer of a probe
 * failure still current and such an operation error.
 */
export function lifecycleOf(f: LifecycleFacts): { lifecycle: Lifecycle; lastError?: string } {
    const probeError =
        f.probe && (f.probe.consecutiveFailures ?? 0) > 0 && f.probe.lastError
            ? { message: f.probe.lastError, at: f.probe.lastProbeAt ?? 0 }
            : undefined;
    const opError = f.opError && f.opError.at > (f.probe?.lastOkAt ?? -Infinity) ? f.opError : undefined;
    const last = probeError && opError ? (probeError.at >= opError.at ? probeError : opError) : (probeError ?? opError);
    const lifecycle: Lifecycle = f.draining
        ? "draining"
        : f.hasAddress && f.health === "healthy"
          ? "ready"
          : f.hasAddress && f.health === "unhealthy"
            ? "failed"
            : opError
              ? "failed"
              : "provisioning";
    return last ? { lifecycle, lastError: last.message } : { lifecycle };
}

/**
 * The member ids an error message names. Resource and process names embed them (`web-1-process`,
 * `svc-web-1`), so a name counts when no letter or digit touches it on either side: `web-1` is found
 * in "svc-web-1 did not start" but not in "web-10".
 */
export function membersMentioned(message: string, ids: Iterable<string>): string[] {
    const out: string[] = [];
    for (const id of ids) {
        let at = message.indexOf(id);
        while (at >= 0) {
            const before = message[at - 1] ?? "";
            const after = message[at + id.length] ?? "";
            if (!/[A-Za-z0-9]/.test(before) && !/[A-Za-z0-9]/.test(after)) {
                out.push(id);
                break;
            }
            at = message.indexOf(id, at + 1);
        }
    }
    return out;
}
