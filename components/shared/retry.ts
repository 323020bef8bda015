/**
 * Bounded exponential backoff for transient provider failures (components/shared/errors.ts), shared by every
 * kind: the GCE and Kubernetes REST clients and the libvirt client. Self-contained (no imports): the KVM
 * dynamic providers are serialized with what they use.
 */

/** How often and how long to try. */
export interface RetrySchedule {
    /** Attempts in all, the first included; 1 = no retry. */
    tries: number;
    /** Wait before the second attempt; each later wait doubles. */
    firstDelayMs: number;
    /** No single wait is longer. */
    maxDelayMs: number;
    /** No new attempt starts once this much time (attempts and waits) would be exceeded. */
    maxTotalMs: number;
}

/** One attempt: for callers that run again on their own schedule (the reconcile loop's next round). */
export const NO_RETRY: RetrySchedule = { tries: 1, firstDelayMs: 0, maxDelayMs: 0, maxTotalMs: 0 };

/** 4 tries, waiting 1 s, 2 s, 4 s (doubling, capped at 8 s), within 30 s in all. */
export const DEFAULT_RETRY_SCHEDULE: RetrySchedule = {
    tries: 4,
    firstDelayMs: 1000,
    maxDelayMs: 8000,
    maxTotalMs: 30000,
};

/**
 * The schedule a provider uses when its caller gives none: `EGRESS_RETRY_SCHEDULE` (`tries,firstMs,maxMs,
 * totalMs`, e.g. `3,10,40,1000`) or the default. The variable reaches code the Pulumi engine runs (dynamic
 * providers), where no option can; tests use it to keep schedules short. A malformed value is refused.
 */
export function defaultRetrySchedule(env: Record<string, string | undefined> = process.env): RetrySchedule {
    const raw = env.EGRESS_RETRY_SCHEDULE;
    if (!raw) return DEFAULT_RETRY_SCHEDULE;
    const n = raw.split(",").map((s) => Number(s.trim()));
    if (n.length !== 4 || !n.every((x) => Number.isInteger(x) && x >= 0) || n[0] < 1)
        throw new Error(
            `EGRESS_RETRY_SCHEDULE must be "tries,firstDelayMs,maxDelayMs,maxTotalMs" (whole numbers, tries >= 1), got ${JSON.stringify(raw)}`,
        );
    return { tries: n[0], firstDelayMs: n[1], maxDelayMs: n[2], maxTotalMs: n[3] };
}

/** The waits between attempts, in order: `firstDelayMs` doubling, each capped at `maxDelayMs`. */
export function retryDelays(s: RetrySchedule): number[] {
    return Array.from({ length: Math.max(0, s.tries - 1) }, (_, i) => Math.min(s.maxDelayMs, s.firstDelayMs * 2 ** i));
}

export interface RetryOptions {
    /** @default defaultRetrySchedule() */
    schedule?: RetrySchedule;
    /** True when the error is worth another attempt. Anything else is thrown at once. */
    retryable: (e: unknown) => boolean;
    /** Stops waiting (and trying) when aborted; the last error is thrown. */
    signal?: AbortSignal;
}

/**
 * Runs `attempt` until it succeeds, fails with an error `retryable` refuses, or the schedule runs out.
 * An error that was retried and still failed gets `(gave up after N tries in X s)` appended, so the
 * message says the failure was not a single blip.
 */
export async function withRetry<T>(attempt: (n: number) => Promise<T>, opts: RetryOptions): Promise<T> {
    const schedule = opts.schedule ?? defaultRetrySchedule();
    const delays = retryDelays(schedule);
    const started = Date.now();
    for (let n = 1; ; n++) {
        try {
            return await attempt(n);
        } catch (e) {
            const wait = delays[n - 1];
            const elapsed = Date.now() - started;
            const more =
                wait !== undefined &&
                elapsed + wait <= schedule.maxTotalMs &&
                !opts.signal?.aborted &&
                opts.retryable(e);
            if (!more) {
                if (n > 1 && e instanceof Error)
                    e.message += ` (gave up after ${n} tries in ${(elapsed / 1000).toFixed(1)} s)`;
                throw e;
            }
            await sleep(wait, opts.signal);
        }
    }
}

/** Waits `ms`, or less when `signal` aborts (the caller then stops on its own). */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
        // `timer` is declared before the closure that reads it: Pulumi's closure serializer (dynamic
        // providers capture this function) fails on a reference to a const declared after its closure.
        let timer: ReturnType<typeof setTimeout> | undefined = undefined;
        const done = () => {
            clearTimeout(timer);
            signal?.removeEventListener("abort", done);
            resolve();
        };
        timer = setTimeout(done, ms);
        signal?.addEventListener("abort", done, { once: true });
    });
}
