import * as fs from "node:fs";
import type { Logger } from "pino";
import { checkpointDir } from "../../engine";

/**
 * Calls `onChange` (debounced) whenever the stack's checkpoint changes: an `egress up` or `pulumi up`
 * outside the service finished a step. A file backend is watched (the engine writes the checkpoint by
 * rename, so the directory is watched, not the file). Any other backend has no file to watch, so
 * `version` is polled every `pollMs` (PostgreSQL: the checkpoint row's `updated_at`; object stores: a
 * digest of the export; docs/decisions/0049-state-backends.md). Returns undefined when there is nothing to watch (a file
 * backend without a checkpoint directory yet, no `version`); the caller's slower poll covers those.
 */
export function watchStackCheckpoint(o: {
    backendDir?: string;
    stack: string;
    debounceMs?: number;
    /** A token that changes with every checkpoint write (StackDriver.stateVersion), for backends that are not directories. */
    version?: () => Promise<string | undefined>;
    /** @default 2000 */
    pollMs?: number;
    onChange: () => void;
    log: Logger;
}): { close(): void } | undefined {
    if (!o.backendDir) return o.version ? pollVersion({ ...o, version: o.version }) : undefined;
    const dir = checkpointDir(o.backendDir);
    if (!fs.existsSync(dir)) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const watcher = fs.watch(dir, (_event, name) => {
        // `<stack>.json`, its `.bak`/`.attrs` companions and the backend's temp files around the rename.
        if (name && !String(name).startsWith(`${o.stack}.json`)) return;
        clearTimeout(timer);
        timer = setTimeout(o.onChange, o.debounceMs ?? 100);
    });
    watcher.on("error", (e) =>
        o.log.warn(
            { err: e, dir },
            "watching the stack checkpoint failed; outside changes are seen by the slower poll only",
        ),
    );
    watcher.unref();
    return {
        close() {
            clearTimeout(timer);
            watcher.close();
        },
    };
}

function pollVersion(o: {
    version: () => Promise<string | undefined>;
    pollMs?: number;
    onChange: () => void;
    log: Logger;
}): { close(): void } {
    let last: string | undefined;
    let first = true;
    let failing = false;
    let inFlight = false;
    const tick = async () => {
        if (inFlight) return; // a slow backend: never two reads at once
        inFlight = true;
        try {
            const v = await o.version();
            if (failing) o.log.info("reading the stack checkpoint's version works again");
            failing = false;
            if (!first && v !== last) o.onChange();
            first = false;
            last = v;
        } catch (e) {
            // Logged once per outage, not every poll; the service keeps serving what it knows.
            if (!failing) o.log.warn({ err: e }, "polling the stack checkpoint's version failed; retrying");
            failing = true;
        } finally {
            inFlight = false;
        }
    };
    void tick();
    const timer = setInterval(() => void tick(), o.pollMs ?? 2_000).unref();
    return { close: () => clearInterval(timer) };
}
