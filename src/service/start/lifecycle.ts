/**
 * The service's life as one ordered list of parts (issue 37): the start-up walks it forward, calling each
 * part's `start`; a stop walks it backward, calling each `stop`. A part therefore stops after everything
 * started after it, and before everything it was started on: the scaler's running operation ends before
 * the leader lock is given up, the lock before the store's connections close. Taking up and putting down
 * the stack's leadership, which a replica does many times in one life, is one part's business
 * (leading.ts `StackLead`): its steps depend on each other's answers (a lock lost mid-way stops them).
 */

/** How a stop goes. */
export interface StopHow {
    /** The start failed: nothing is waited for (answers, the running operation), the caller exits. */
    failed?: true;
    /** A graceful stop's way with the running operation (Scaler.drain): finished, or with `cancel` cancelled safely. */
    drain?: { cancel?: boolean };
}

/** One part of the service's life. A start that fails leaves nothing of itself running. */
export interface LifePart {
    /** What it is, for the reader and for a failed start's log line. */
    name: string;
    start?(): Promise<void> | void;
    stop?(how: StopHow): Promise<void> | void;
}

/**
 * Starts the parts in order. When one fails, those already started are stopped, last first (`failed`),
 * and its error goes up: nothing may keep the process alive after a failed start (the CLI must exit
 * non-zero).
 */
export async function startAll(parts: readonly LifePart[]): Promise<void> {
    const started: LifePart[] = [];
    try {
        for (const p of parts) {
            await p.start?.();
            started.push(p);
        }
    } catch (e) {
        await stopAll(started, { failed: true });
        throw e;
    }
}

/** Stops the parts, last started first. */
export async function stopAll(parts: readonly LifePart[], how: StopHow): Promise<void> {
    for (const p of [...parts].reverse()) await p.stop?.(how);
}
