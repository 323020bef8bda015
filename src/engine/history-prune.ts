/**
 * Bounds the backend's growth. Every update adds to the stack's history (an update record plus a copy
 * of the whole checkpoint, 75 KB for two local members: dynamic providers carry their code) and nothing
 * in Pulumi prunes it. egress keeps the newest HISTORY_KEEP updates (`pulumi stack history` shows those)
 * for the file and PostgreSQL backends; backups are off by default (env.ts). Object stores bound
 * themselves with a lifecycle rule on `.pulumi/history/` (docs/engine.md).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { StateBackend } from "./backend";
import { PROJECT } from "./checkpoint";
import { prunePostgresHistory } from "./postgres-state";

/** Updates kept in history: $EGRESS_STATE_HISTORY (0 keeps everything), else 20. */
export function historyKeep(env: NodeJS.ProcessEnv = process.env): number {
    const n = Number(env.EGRESS_STATE_HISTORY ?? 20);
    return Number.isInteger(n) && n >= 0 ? n : 20;
}

/** Prunes the stack's history and backups past `keep` updates; returns what was deleted (files or rows). */
export async function pruneHistory(backend: StateBackend, stack: string, keep = historyKeep()): Promise<number> {
    if (keep === 0) return 0;
    if (backend.kind === "postgres") return prunePostgresHistory(backend.url, stack, keep);
    if (!backend.fileDir) return 0;
    let deleted = 0;
    const root = path.join(backend.fileDir, ".pulumi");
    for (const [dir, perUpdate] of [
        [path.join(root, "history", PROJECT, stack), 2],
        [path.join(root, "backups", PROJECT, stack), 1],
    ] as const) {
        let names: string[];
        try {
            names = fs.readdirSync(dir);
        } catch {
            continue;
        }
        // `.attrs` sidecars go with their blob; names carry a fixed-width nanosecond time, so they sort by age.
        const blobs = names.filter((n) => !n.endsWith(".attrs")).sort();
        for (const n of blobs.slice(0, Math.max(0, blobs.length - keep * perUpdate))) {
            fs.rmSync(path.join(dir, n), { force: true });
            fs.rmSync(path.join(dir, `${n}.attrs`), { force: true });
            deleted++;
        }
    }
    return deleted;
}
