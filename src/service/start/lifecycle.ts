/**
 * One lifecycle for the service's parts (docs/decisions/0098-one-lifecycle.md): an ordered list of
 * named parts, started walking forward and stopped walking backward over what started. A part whose
 * start is nothing can still have a stop: where it sits in the list says when it stops.
 */

/** Where a failing stop is told (the service's pino logger). */
export interface LifeLog {
    warn(obj: object, msg: string): void;
}

/** One part: its name (in logs), what starts it and what stops it, either optional. */
export interface LifePart<How = void> {
    readonly name: string;
    /** Awaited before the next part starts; a throw stops the parts started before it. */
    start?(): unknown;
    /** Awaited before the part before it stops; a throw is logged and the walk goes on. */
    stop?(how: How): unknown;
}

/**
 * Parts started in list order and stopped in the reverse order. `How` is what a stop is told (a
 * graceful stop or a cancelling one), passed to every part's stop.
 */
export class Lifecycle<How = void> {
    private readonly started: LifePart<How>[] = [];
    private stopped?: Promise<void>;

    constructor(
        private readonly parts: readonly LifePart<How>[],
        private readonly log: LifeLog,
    ) {}

    /**
     * Starts each part in order, each awaited. If one fails, the parts started before it are stopped
     * (in reverse, told `ifFailed`) and its error is rethrown, so nothing opened keeps the process alive.
     */
    async start(ifFailed: How): Promise<void> {
        if (this.started.length || this.stopped) throw new Error("a lifecycle starts once");
        for (const part of this.parts) {
            try {
                await part.start?.();
            } catch (e) {
                await this.stop(ifFailed);
                throw e;
            }
            this.started.push(part);
        }
    }

    /**
     * Stops what started, last started first, each awaited. A part's failure is logged and the walk goes
     * on: one failing close never leaves the rest open. Stops once; a second call waits for the first.
     */
    stop(how: How): Promise<void> {
        this.stopped ??= this.walkBack(how);
        return this.stopped;
    }

    private async walkBack(how: How): Promise<void> {
        for (let part = this.started.pop(); part; part = this.started.pop()) {
            try {
                await part.stop?.(how);
            } catch (e) {
                this.log.warn({ err: e, part: part.name }, `stopping ${part.name} failed; stopping the rest`);
            }
        }
    }
}
