import * as cp from "node:child_process";

/** The path of `bin` on PATH, or undefined. */
export function which(bin: string): string | undefined {
    const r = cp.spawnSync("sh", ["-c", 'command -v "$1"', "sh", bin], { encoding: "utf8" });
    return r.status === 0 ? r.stdout.trim() : undefined;
}
