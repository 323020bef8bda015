import * as fs from "node:fs";
import type { Logger } from "pino";
import { checkpointDir } from "../../engine";

/**
 * Calls `onChange` (debounced) whenever the stack's checkpoint in a file backend changes: an `egress up`
 * or `pulumi up` outside the service finished a step. The engine writes the checkpoint by rename, so the
 * directory is watched, not the file. Returns undefined when there is nothing to watch (no file backend,
 * or no checkpoint directory yet); the caller's slower poll covers those.
 */
export function watchStackCheckpoint(o: {
    backendDir?: string;
    stack: string;
    debounceMs?: number;
    onChange: () => void;
    log: Logger;
}): { close(): void } | undefined {
    if (!o.backendDir) return undefined;
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
