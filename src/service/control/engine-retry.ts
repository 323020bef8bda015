import type { Logger } from "pino";
import type { EngineError } from "../../engine";

/** How often and how long an operation retries when another update (a person's `egress up`) holds the lock. */
const LOCK_RETRIES = [2, 5, 10, 20, 30].map((s) => s * 1000);

/** An engine run, retried with backoff while someone else's update holds the stack lock (never surfaced as 409). */
export async function retryWhileLocked<T>(log: Logger, run: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
        try {
            return await run();
        } catch (e) {
            if (!(e as EngineError).locked || attempt >= LOCK_RETRIES.length) throw e;
            log.warn(
                { attempt: attempt + 1, waitMs: LOCK_RETRIES[attempt] },
                "stack locked by another update; retrying",
            );
            await new Promise((r) => setTimeout(r, LOCK_RETRIES[attempt]));
        }
    }
}
