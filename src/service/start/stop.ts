import type { Logger } from "pino";
import type { Gateway } from "../gateway";
import type { Lifecycle } from "./lifecycle";
import type { ApiListener } from "./listeners";
import type { Parts } from "./parts";

/** How long answers still being written at the end of a graceful stop may take before their connections are cut. */
export const CLOSE_GRACE_MS = 2_000;

/** What each part's stop is told: whether to cancel the running operation, and the listeners' grace. */
export interface StopHow {
    cancel?: boolean;
    graceMs: number;
}

/** A failed start closes what it opened at once: no answer but 503 not_ready was being written. */
export const FAILED_START: StopHow = { graceMs: 0 };

/** What a running service's stop needs besides its lifecycle. */
export interface StopInputs {
    parts: Parts;
    log: Logger;
    /** Answers 503 not_ready from now on (the listener stays open until the end). */
    stopping(): void;
}

/**
 * Stops a started service: answers 503 not_ready at once, then walks its lifecycle backward
 * (service-life.ts): the loops that start operations; the running operation (or cancels it); what the
 * operation recorded, flushed while this replica still holds the lock; the lock; the stores' writers and
 * readers; the probes; the listeners (answers being written get a grace, then are cut); the lease store
 * last, so releases of answers still in flight reach it.
 */
export async function stopService(
    life: Lifecycle<StopHow>,
    s: StopInputs,
    closeOpts: { cancel?: boolean } = {},
): Promise<void> {
    // The listener stays open while the running operation finishes: every request but /healthz
    // and /metrics is answered 503 not_ready with Retry-After (app.ts), not refused.
    s.stopping();
    s.log.info(
        { operationRunning: s.parts.scaler.busy() },
        "stopping: answering 503 not_ready until the running operation has finished",
    );
    await life.stop({ cancel: closeOpts.cancel, graceMs: CLOSE_GRACE_MS });
    s.log.info("egress service stopped");
}

/** Closes the API and the gateway: idle connections now, answers being written after `graceMs`. */
export async function closeListeners(
    server: ApiListener["server"],
    gateway: Gateway | undefined,
    graceMs: number,
): Promise<void> {
    const closed = new Promise<void>((r) => server.close(() => r()));
    const gatewayClosed = gateway?.close(graceMs);
    server.closeIdleConnections();
    // Answers being written get a moment to finish, then whatever is left is cut.
    const cut = setTimeout(() => server.closeAllConnections(), graceMs);
    await closed;
    await gatewayClosed;
    clearTimeout(cut);
}
