import * as os from "node:os";
import { markGoneElsewhere } from "../../engine";

/** Beyond the kill grace: the clocks of two hosts may run a little apart over a few seconds. */
const MARGIN_MS = 2_000;

/** A lock holder on another host, as a Pulumi lock names it. */
type Holder = { pid: number; hostname: string };

/**
 * A new holder's wait for the engines of the previous holder of the store's lock on another host, before
 * its recovery (a replica taking the lead, service/start/leading.ts) or its engine run (an `egress`
 * command with `--store`, cli/writer.ts).
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
    /** Local clock time since which this process holds the store's lock; undefined once it does not. */
    leadingSince: () => number | undefined;
    graceMs: number;
    /** Says what it waits for and what it counts gone (a log line, or stderr). */
    notice: (line: string, detail: { holders: Holder[]; waitMs?: number }) => void;
}): Promise<boolean> {
    const foreign = (await o.holders()).filter(
        (h): h is Holder => !!h.pid && !!h.hostname && h.hostname !== os.hostname(),
    );
    if (!foreign.length) return true;
    const since = o.leadingSince();
    if (since === undefined) return false;
    const wait = since + o.graceMs + MARGIN_MS - Date.now();
    const named = foreign.map((h) => `pid ${h.pid} on ${h.hostname}`).join(", ");
    if (wait > 0) {
        o.notice(
            `the stack's Pulumi lock is held by ${named}, a previous holder of the store's lock: waiting ${Math.ceil(wait / 1000)} s (--engine-kill-grace) for its engine to have ended`,
            { holders: foreign, waitMs: wait },
        );
        const until = Date.now() + wait;
        while (Date.now() < until) {
            await new Promise((r) => setTimeout(r, Math.min(500, until - Date.now())));
            if (o.leadingSince() !== since) return false;
        }
    }
    markGoneElsewhere(foreign);
    o.notice(`counting ${named} as gone: its lock is cleared`, { holders: foreign });
    return true;
}
