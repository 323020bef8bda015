import type { ScalerDeps } from "./scaler-deps";

/** How long a surge member or a replacement may take to pass its health check before the operation fails. */
export const HEALTHY_TIMEOUT_MS = 10 * 60_000;

/**
 * Waits until every member passed a health probe after `after` (epoch ms) and reads healthy: a rotation
 * (rotate/run.ts) and a rolling change (rolling/run.ts) go on only once what they created serves.
 */
export async function waitHealthy(deps: ScalerDeps, ids: readonly string[], after: number, signal: AbortSignal) {
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
