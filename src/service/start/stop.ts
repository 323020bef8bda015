import type { Logger } from "pino";
import type { Gateway } from "../gateway";
import type { ApiListener } from "./listeners";
import type { Parts } from "./parts";

/** How long answers still being written at the end of a graceful stop may take before their connections are cut. */
const CLOSE_GRACE_MS = 2_000;

/** What a running service stops besides its parts: its listeners and its own timers. */
export interface StopInputs {
    parts: Parts;
    server: ApiListener["server"];
    gateway?: Gateway;
    /** The service's own intervals (the lease sweep, the outputs poll). */
    timers: NodeJS.Timeout[];
    log: Logger;
    /** Answers 503 not_ready from now on (the listener stays open until the end). */
    stopping(): void;
}

/**
 * Stops a started service, in this order: the loops that start operations; the running operation (or
 * cancels it); what the operation recorded, flushed while this replica still holds the lock; the lock;
 * the stores' writers and readers; the probes; the listeners (answers being written get a grace, then
 * are cut); the lease store last, so releases of answers still in flight reach it.
 */
export async function stopService(s: StopInputs, closeOpts: { cancel?: boolean } = {}): Promise<void> {
    const { parts: p, log } = s;
    // The listener stays open while the running operation finishes: every request but /healthz
    // and /metrics is answered 503 not_ready with Retry-After (app.ts), not refused.
    s.stopping();
    log.info(
        { operationRunning: p.scaler.busy() },
        "stopping: answering 503 not_ready until the running operation has finished",
    );
    await p.reconciler.stop();
    await p.autoscaler.stop();
    await p.rotator.stop();
    await p.scaleQueue?.follow(); // what followers queue from now on waits for the next leader
    await p.scaler.drain(closeOpts);
    // The settled (or set-aside) records reach the store's journal while this replica still holds the lock.
    await p.ops
        .flushed()
        .catch((e) => log.warn({ err: e }, "the operation journal could not be written before stopping"));
    await p.desired
        ?.flushed()
        .catch((e) => log.warn({ err: e }, "the desired counts could not be written before stopping"));
    await p.events?.flushed(); // appended only while this replica holds the lock
    await p.cluster?.stop(); // after the running operation: the lock guards it to the end
    p.journal?.close();
    p.events?.close();
    p.desired?.close();
    p.healStore?.close(); // after the running operation: a heal settling writes its back-off
    for (const t of s.timers) clearInterval(t);
    await p.timeline.stop();
    await p.health.stop();
    await p.verdicts?.close();
    await p.scaleQueue?.close();
    await p.providerHealth.stop();
    p.session?.redis.disconnect(); // every part that shared it has stopped
    await closeListeners(s.server, s.gateway);
    await p.redisStore?.close();
    log.info("egress service stopped");
}

/** Closes the API and the gateway: idle connections now, answers being written after a grace. */
async function closeListeners(server: ApiListener["server"], gateway: Gateway | undefined): Promise<void> {
    const closed = new Promise<void>((r) => server.close(() => r()));
    const gatewayClosed = gateway?.close(CLOSE_GRACE_MS);
    server.closeIdleConnections();
    // Answers being written get a moment to finish, then whatever is left is cut.
    const cut = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
    await closed;
    await gatewayClosed;
    clearTimeout(cut);
}
