import type { Logger } from "pino";
import type { EngineError } from "../../engine";

/** How often and how long an operation retries while the stack is locked by another update or the backend is down. */
const LOCK_RETRIES = [2, 5, 10, 20, 30].map((s) => s * 1000);

/**
 * An engine run, retried with backoff while it fails transiently: someone else's update holds the stack
 * lock (never surfaced as 409), or the Pulumi backend is unreachable.
 */
export async function retryTransient<T>(log: Logger, run: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
        try {
            return await run();
        } catch (e) {
            if (!(e as EngineError).transient || attempt >= LOCK_RETRIES.length) throw e;
            log.warn(
                { attempt: attempt + 1, waitMs: LOCK_RETRIES[attempt], error: (e as Error).message },
                (e as EngineError).locked
                    ? "stack locked by another update; retrying"
                    : "the Pulumi backend is unreachable; retrying",
            );
            await new Promise((r) => setTimeout(r, LOCK_RETRIES[attempt]));
        }
    }
}
