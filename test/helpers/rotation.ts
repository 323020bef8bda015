/**
 * What rotation service tests (test/service/rotate*.test.ts) read of a running service: a pool's view,
 * the rotate operations, the members' URLs (the capacity sampler is service.ts' samplePool).
 */
import { convergedOk, poolView, proxyUrls, startTestService, type TestService, TOKENS } from "./service";

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
        pool: (name: string) => poolView(svc, name),
        /** Rotate operations, oldest first. */
        rotateOps: async () =>
            ((await svc.call("GET", "/v1/operations", { token: TOKENS.scale })).body.operations as any[]).filter(
                (o) => o.kind === "rotate",
            ),
        /** Member id → URL (a local member's replacement is a new process: a new port). */
        urls: (pool?: string) => proxyUrls(svc, pool),
        /** The admin-scoped /metrics text. */
        metrics: async () => (await svc.call("GET", "/metrics", { token: TOKENS.admin })).body as string,
    };
}

/**
 * A service over local pools (each `provider: local` unless it says otherwise) whose rotator decides every
 * 500 ms, once its start-up convergence succeeded.
 */
export async function startRotatingService(pools: Record<string, unknown>[]): Promise<TestService> {
    const svc = await startTestService(
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": pools.map((p) => ({ provider: "local", ...p })),
        },
        { rotateIntervalMs: 500 },
    );
    await convergedOk(svc);
    return svc;
}
