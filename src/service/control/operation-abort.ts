import type { Logger } from "pino";
import type { StackDriver } from "../../engine";

/**
 * The abort of one running operation (scaler.ts). The service stopping aborts its waits (the drain, the
 * writer lock, a rotation's health wait); the engine runs it still has to make go on, as a stop waits for
 * the running operation. This replica losing the stack's lock (`abandon`) aborts its waits too, and the
 * driver starts no further engine run until the operation ended: the lock may be another's.
 */
export class OperationAbort {
    private readonly controller = new AbortController();
    private readonly onStop = () => this.controller.abort(this.stopping.reason);
    private abandonedBy?: StackDriver;
    private disarmKill?: () => void;

    constructor(private readonly stopping: AbortSignal) {
        if (stopping.aborted) this.onStop();
        else stopping.addEventListener("abort", this.onStop, { once: true });
    }

    get signal(): AbortSignal {
        return this.controller.signal;
    }

    /** True once `abandon` ran: whatever the operation failed with then, it was cut off, not broken. */
    get isAbandoned(): boolean {
        return this.abandonedBy !== undefined;
    }

    /**
     * Aborts the operation, refuses the driver's further engine runs, cancels the one in progress (it
     * saves state and stops), and ends the engine's processes if the run has not ended `graceMs` later (a
     * step stuck in a provider), so a leader on another host can count on it being gone. Logs what it
     * did, with `why`.
     */
    abandon(why: string, driver: StackDriver, graceMs: number, log: Logger): void {
        if (this.abandonedBy) return;
        const reason = new Error(why);
        this.abandonedBy = driver;
        const { engineRunning, disarm } = driver.abandon(reason, graceMs, () =>
            log.error({ graceMs }, "the cancelled engine run did not end in time: its processes were ended"),
        );
        this.disarmKill = disarm;
        this.controller.abort(reason);
        log.warn({ engineRunning, graceMs }, why);
    }

    /** The operation ended: nothing of it is left to cancel or end, and the driver may run again when asked. */
    dispose(): void {
        this.disarmKill?.();
        this.abandonedBy?.refuseRuns(undefined);
        this.stopping.removeEventListener("abort", this.onStop);
    }
}
