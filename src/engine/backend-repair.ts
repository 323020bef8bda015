import * as fs from "node:fs";
import * as path from "node:path";
import { checkpointDir, PROJECT } from "./checkpoint";

/**
 * Repairs what a SIGKILL can leave half-written in a file backend. The backend (gocloud's fileblob)
 * writes each blob to a temp file and renames it into place, which is atomic, but rewrites the blob's
 * `.attrs` sidecar in place: killed in between, the sidecar is empty and every later command fails with
 * "failed to load checkpoint: EOF". A missing sidecar is fine to the backend (it means "no attributes"),
 * so an unreadable one is removed; temp files of killed writes are removed too.
 *
 * Only for a stack no live process is writing (the caller checks the stack's locks first): a live
 * writer's sidecar is briefly empty by design. Returns a line per repair, for the log.
 */
export function repairFileBackend(backendDir: string | undefined, stack: string): string[] {
    if (!backendDir) return [];
    const root = path.join(backendDir, ".pulumi");
    const stackDir = checkpointDir(backendDir);
    const candidates: string[] = [path.join(root, "meta.yaml.attrs")];
    if (fs.existsSync(stackDir))
        for (const f of fs.readdirSync(stackDir))
            if (f.startsWith(`${stack}.json`)) candidates.push(path.join(stackDir, f));
    // History and backups grow by a few files per update and are never pruned; a killed writer can only
    // have left its newest ones half-written (names carry a nanosecond timestamp, so they sort by age).
    for (const dir of [path.join(root, "history", PROJECT, stack), path.join(root, "backups", PROJECT, stack)])
        if (fs.existsSync(dir))
            for (const f of fs.readdirSync(dir).sort().slice(-8)) candidates.push(path.join(dir, f));
    const done: string[] = [];
    for (const file of candidates) {
        if (file.endsWith(".tmp")) {
            fs.rmSync(file, { force: true });
            done.push(`removed ${path.relative(backendDir, file)} (a write a killed process never finished)`);
        } else if (file.endsWith(".attrs") && !readableJson(file)) {
            fs.rmSync(file, { force: true });
            done.push(`removed the unreadable ${path.relative(backendDir, file)} (half-written by a killed process)`);
        }
    }
    return done;
}

function readableJson(file: string): boolean {
    try {
        JSON.parse(fs.readFileSync(file, "utf8"));
        return true;
    } catch (e) {
        return (e as NodeJS.ErrnoException).code === "ENOENT";
    }
}
