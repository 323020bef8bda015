import type { ProxyMember } from "../model";
import type { MemberHealthView } from "../probes";
import type { RotationRecord } from "../state/operations/operation";

/** How long a surge member or a replacement may take to pass its health check before the operation fails. */
export const HEALTHY_TIMEOUT_MS = 10 * 60_000;

/**
 * What a rotation (src/service/control/rotate/run.ts) needs between its engine runs: the fleet re-synced
 * with the members an update left (so new ones are probed and leasable before the old ones drain), and
 * their health. The service's ScalerDeps `rotation`.
 */
export interface HealthWatch {
    refresh: (proxies?: ProxyMember[]) => Promise<void>;
    health: (id: string) => MemberHealthView | undefined;
    /** @default HEALTHY_TIMEOUT_MS (10 min) */
    healthyTimeoutMs?: number;
    /**
     * A member's replacement passed its health check (`newEgressIp` set): true when that IP is one the
     * pool had lately (the rotator's IpMemory; it also logs and counts it).
     */
    replaced?: (r: RotationRecord) => boolean;
}

/**
 * Waits until every member passed a health probe after `after` (epoch ms) and reads healthy: a rotation
 * (rotate/run.ts) and a rolling change (rolling/run.ts) go on only once what they created serves.
 */
export async function waitHealthy(
    deps: { rotation?: HealthWatch },
    ids: readonly string[],
    after: number,
    signal: AbortSignal,
) {
    const env = deps.rotation;
    if (!env || !ids.length) return;
    const deadline = Date.now() + (env.healthyTimeoutMs ?? HEALTHY_TIMEOUT_MS);
    const ok = (id: string) => {
        const h = env.health(id);
        return h?.state === "healthy" && (h.lastOkAt ?? 0) > after;
    };
    while (!ids.every(ok)) {
        if (signal.aborted) throw signal.reason as Error;
        if (Date.now() > deadline)
            throw new Error(
                `${ids.filter((id) => !ok(id)).join(", ")} did not pass a health check within ${Math.round((env.healthyTimeoutMs ?? HEALTHY_TIMEOUT_MS) / 1000)} s; the operation stops and the pool goes back to its replicas`,
            );
        await new Promise((r) => setTimeout(r, 250));
    }
}
