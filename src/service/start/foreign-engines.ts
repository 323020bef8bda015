import * as os from "node:os";
import type { Logger } from "pino";
import { markGoneElsewhere } from "../../engine";

/** Beyond the kill grace: the clocks of two hosts may run a little apart over a few seconds. */
const MARGIN_MS = 2_000;

/**
 * A new leader's wait for the engines of the previous lock holder on another host, before recovery.
 *
 * A Pulumi lock (a row of a PostgreSQL backend) names its holder by host and pid, and a process of
 * another host cannot be checked, so it counts as alive: a killed leader's lock would stop the stack
 * for good. But with replicas every engine run is fenced by the store's lock (a replica leads, or an
 * `egress` command holds it), and whoever loses that lock ends its engine within `--engine-kill-grace`
 * of losing it (a dead process's engine dies with it at once: tools/supervise). This replica took the
 * lock only after the previous holder's had run out, so once it has led for the grace (plus a margin for
 * clocks), the holders of the locks it found at take-over are gone: they are marked so, and recovery
 * then clears their locks and finishes their pending operations as it does a dead process of this host.
 *
 * Only the holders found now are marked: a lock taken later is not a fenced run's (this replica holds
 * the store's lock), so it stays a live holder's, as does every lock of a process without the store.
 * Returns false when this replica stopped leading during the wait (then it marks nothing).
 */
export async function awaitForeignEngines(o: {
    holders: () => Promise<{ pid?: number; hostname?: string }[]>;
    /** Local clock time since which this replica leads; undefined once it does not. */
    leadingSince: () => number | undefined;
    graceMs: number;
    log: Logger;
}): Promise<boolean> {
    const foreign = (await o.holders()).filter(
        (h): h is { pid: number; hostname: string } => !!h.pid && !!h.hostname && h.hostname !== os.hostname(),
    );
    if (!foreign.length) return true;
    const since = o.leadingSince();
    if (since === undefined) return false;
    const wait = since + o.graceMs + MARGIN_MS - Date.now();
    const named = foreign.map((h) => `pid ${h.pid} on ${h.hostname}`).join(", ");
    if (wait > 0) {
        o.log.warn(
            { holders: foreign, waitMs: wait },
            `the stack's Pulumi lock is held by ${named}, a previous holder of the store's lock: waiting ${Math.ceil(wait / 1000)} s (--engine-kill-grace) for its engine to have ended, then recovering`,
        );
        const until = Date.now() + wait;
        while (Date.now() < until) {
            await new Promise((r) => setTimeout(r, Math.min(500, until - Date.now())));
            if (o.leadingSince() !== since) return false;
        }
    }
    markGoneElsewhere(foreign);
    o.log.warn({ holders: foreign }, `counting ${named} as gone: its lock is cleared by the recovery`);
    return true;
}
