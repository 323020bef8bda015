/**
 * The service's process-wide rule for engine disconnects, applied to a test process that runs the
 * service in itself (startTestService). When an update fails or is cancelled the engine exits while the
 * inline program may still have calls in flight; those reject with gRPC UNAVAILABLE/CANCELLED after
 * nobody awaits them. `egress serve` drops exactly those (src/engine/program-disconnect.ts) and crashes
 * on anything else. node's test runner has its own unhandledRejection listener, which failed the file
 * for such a drop (converge-retry's deliberately failed `up`s, about one run in three). Here the
 * runner's listeners still hear every other rejection, so a real one fails the file as before.
 */
import { isEngineDisconnect } from "../../src/engine/program-disconnect";

let applied = false;

export function dropEngineDisconnectsAsTheServiceDoes(): void {
    if (applied) return;
    applied = true;
    const runner = process.listeners("unhandledRejection");
    process.removeAllListeners("unhandledRejection");
    process.on("unhandledRejection", (reason, promise) => {
        if (isEngineDisconnect(reason)) return;
        for (const l of runner) l(reason, promise);
    });
}
