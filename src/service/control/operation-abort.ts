import type { Logger } from "pino";
import type { StackDriver } from "../../engine";

/** What may still be called once the operation was aborted: the calls that stop an engine run. */
const STOPPERS = new Set<PropertyKey>(["cancel", "kill"]);

/**
 * The abort of one running operation (scaler.ts). The service stopping aborts its waits (the drain, the
 * writer lock, a rotation's health wait); the engine runs it still has to make go on, as a stop waits for
 * the running operation. This replica losing the stack's lock (`abandon`) aborts its waits too, and its
 * driver (`guard`) starts no further engine work: the lock may be another's.
 */
export class OperationAbort {
    private readonly controller = new AbortController();
    private readonly abandoned = new AbortController();
    private readonly onStop = () => this.controller.abort(this.stopping.reason);
    private killTimer?: NodeJS.Timeout;

    constructor(private readonly stopping: AbortSignal) {
        if (stopping.aborted) this.onStop();
        else stopping.addEventListener("abort", this.onStop, { once: true });
    }

    get signal(): AbortSignal {
        return this.controller.signal;
    }

    /** True once `abandon` ran: whatever the operation failed with then, it was cut off, not broken. */
    get isAbandoned(): boolean {
        return this.abandoned.signal.aborted;
    }

    /**
     * The stack's driver as the operation sees it: once abandoned, every call that would start engine
     * work throws the reason instead, so an operation between two engine runs starts no further one. A
     * Proxy rather than a copy of the driver's methods: every method, today's and tomorrow's, is guarded.
     */
    guard(driver: StackDriver): StackDriver {
        const signal = this.abandoned.signal;
        return new Proxy(driver, {
            get(target, key, receiver) {
                const value = Reflect.get(target, key, receiver);
                if (typeof value !== "function" || STOPPERS.has(key)) return value;
                return (...args: unknown[]) => {
                    if (signal.aborted) throw signal.reason;
                    return value.apply(target, args);
                };
            },
        });
    }

    /**
     * Aborts the operation, cancels its engine run (which saves state and stops), and ends the engine's
     * processes if the run has not ended `graceMs` later (a step stuck in a provider), so a leader on
     * another host can count on it being gone. Logs what it did, with `why`.
     */
    abandon(why: string, driver: StackDriver, graceMs: number, log: Logger): void {
        if (this.abandoned.signal.aborted) return;
        const reason = new Error(why);
        this.abandoned.abort(reason);
        this.controller.abort(reason);
        log.warn({ engineRunning: driver.cancel(), graceMs }, why);
        this.killTimer = setTimeout(() => {
            if (driver.kill())
                log.error({ graceMs }, "the cancelled engine run did not end in time: its processes were ended");
        }, graceMs);
        this.killTimer.unref();
    }

    /** The operation ended: nothing of it is left to cancel or end. */
    dispose(): void {
        clearTimeout(this.killTimer);
        this.stopping.removeEventListener("abort", this.onStop);
    }
}
