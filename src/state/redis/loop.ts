import type { Logger } from "pino";

export interface LoopOptions {
    /** Names the loop in its log lines: "reconcile" logs "reconcile round failed". */
    name: string;
    /** Time from the end of one round to the start of the next, ms (> 0): a slow round is never overlapped. */
    everyMs: number;
    /**
     * One round. It may be synchronous; an error it throws is logged once per streak (see `failed`).
     * Called synchronously by start() when `firstAfterMs` is 0, so a first round starts before start() returns.
     */
    round: () => unknown;
    log: Logger;
    /** Time from start() to the first round, ms; 0 runs it at once, inside start(). Defaults to `everyMs`. */
    firstAfterMs?: number;
    /**
     * Errors that end a round without a word and neither start nor end a streak: the service stopping or
     * this replica not leading (control's NotAcceptingError), which the next round sees for itself.
     */
    quiet?: (e: unknown) => boolean;
}

/**
 * One periodic loop (issue 37): the reconciler, the rotator, the autoscaler, the scale queue, the store
 * timeline and the provider checks each run on one. A round at a time: the next is scheduled only when one
 * ends, so rounds never overlap however slow. stop() waits for the round in flight, so nothing a loop
 * does runs after the part that owns it has stopped (the service closes the store, the engine and the
 * journal right after). A failing round is logged once when the streak starts (warn), at debug while it
 * lasts and once when a round succeeds again (info): a store that is away for an hour is two lines, not
 * one per round. Timers are unref'd: a loop never keeps the process alive.
 */
export class Loop {
    private timer?: NodeJS.Timeout;
    private inFlight?: Promise<void>;
    private running = false;
    /** Rounds that failed in a row; 0 once one succeeds. */
    private failures = 0;

    constructor(private readonly o: LoopOptions) {
        if (!(Number.isFinite(o.everyMs) && o.everyMs > 0))
            throw new RangeError(`loop ${o.name}: \`everyMs\` must be a positive number of ms, got ${o.everyMs}`);
        const first = o.firstAfterMs ?? o.everyMs;
        if (!(Number.isFinite(first) && first >= 0))
            throw new RangeError(`loop ${o.name}: \`firstAfterMs\` must be a number of ms ≥ 0, got ${first}`);
    }

    /** Whether start() was called and stop() not since. */
    get started(): boolean {
        return this.running;
    }

    /** Starts the rounds; does nothing while started. */
    start(): void {
        if (this.running) return;
        this.running = true;
        // Restarted before the round of the last stop() ended: that round's end schedules the next one.
        if (this.inFlight) return;
        const first = this.o.firstAfterMs ?? this.o.everyMs;
        if (first === 0) this.run();
        else this.schedule(first);
    }

    /** Stops scheduling rounds; resolves once the round in flight (if any) has ended. Never rejects. */
    async stop(): Promise<void> {
        this.running = false;
        clearTimeout(this.timer);
        this.timer = undefined;
        await this.inFlight;
    }

    private schedule(ms: number): void {
        this.timer = setTimeout(() => this.run(), ms).unref();
    }

    private run(): void {
        this.timer = undefined;
        this.inFlight = this.once().finally(() => {
            this.inFlight = undefined;
            if (this.running) this.schedule(this.o.everyMs);
        });
    }

    /** One round, its outcome logged; never rejects (a rejection would end the chain of rounds). */
    private async once(): Promise<void> {
        try {
            await this.o.round();
        } catch (e) {
            if (!this.o.quiet?.(e)) this.failed(e);
            return;
        }
        if (this.failures === 0) return;
        this.o.log.info(
            { loop: this.o.name, failures: this.failures },
            `${this.o.name} rounds succeed again after ${this.failures} failed`,
        );
        this.failures = 0;
    }

    private failed(e: unknown): void {
        this.failures++;
        if (this.failures === 1) this.o.log.warn({ err: e, loop: this.o.name }, `${this.o.name} round failed`);
        else
            this.o.log.debug(
                { err: e, loop: this.o.name, failures: this.failures },
                `${this.o.name} round failed again (${this.failures} in a row)`,
            );
    }
}
