/**
 * What rotation service tests (test/service/rotate*.test.ts) read of a running service: a pool's view,
 * the rotate operations, the members' URLs, and a capacity sampler that runs beside a test.
 */
import { type TestService, TOKENS } from "./service";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The env var that lowers the rotateAfterSeconds floor, set for a test file and restored after it. */
export function lowerRotateFloor(seconds: number): () => void {
    const before = process.env.EGRESS_TEST_MIN_ROTATE_SECONDS;
    // Read by the service's config load and, through the engine's allow-listed env, by the program's.
    process.env.EGRESS_TEST_MIN_ROTATE_SECONDS = String(seconds);
    return () => {
        if (before === undefined) delete process.env.EGRESS_TEST_MIN_ROTATE_SECONDS;
        else process.env.EGRESS_TEST_MIN_ROTATE_SECONDS = before;
    };
}

export function rotationReads(svc: TestService) {
    return {
        /** The pool as GET /v1/pools shows it. */
        pool: async (name: string) =>
            (await svc.call("GET", "/v1/pools", { token: TOKENS.discover })).body.pools.find(
                (p: any) => p.name === name,
            ),
        /** Rotate operations, oldest first. */
        rotateOps: async () =>
            ((await svc.call("GET", "/v1/operations", { token: TOKENS.scale })).body.operations as any[]).filter(
                (o) => o.kind === "rotate",
            ),
        /** Member id → URL (a local member's replacement is a new process: a new port). */
        urls: async (pool?: string) =>
            new Map<string, string>(
                (
                    (await svc.call("GET", `/v1/proxies${pool ? `?pool=${pool}` : ""}`, { token: TOKENS.discover }))
                        .body.proxies as any[]
                ).map((p) => [p.id, p.url]),
            ),
        /** The admin-scoped /metrics text. */
        metrics: async () => (await svc.call("GET", "/metrics", { token: TOKENS.admin })).body as string,
    };
}

/**
 * Samples a pool's healthy and actual counts every 250 ms until `stop`, checking `each` on every sample
 * (e.g. that a rotation's surge is no new desired count). `stop` returns the samples.
 */
export function sampleCapacity(svc: TestService, pool: string, each?: (p: any) => void) {
    const reads = rotationReads(svc);
    const healthy: number[] = [];
    const actual: number[] = [];
    let sampling = true;
    const loop = (async () => {
        while (sampling) {
            const p = await reads.pool(pool);
            healthy.push(p.healthy);
            actual.push(p.actual);
            each?.(p);
            await sleep(250);
        }
    })();
    return {
        stop: async () => {
            sampling = false;
            await loop;
            return { healthy, actual };
        },
    };
}
