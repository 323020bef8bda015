import * as fs from "node:fs";
import * as path from "node:path";
import { stackFile } from "./load";

/**
 * Stacks that ship as a seed: `stacks/seeds/<stack>.yaml` is tracked, `stacks/Pulumi.<stack>.yaml` is
 * made from it on first use and belongs to the machine (git-ignored). Pulumi writes the machine's
 * passphrase salt into a stack file, and `egress scale` writes replicas there; for the `dev` playground
 * both are hand-run state that must never reach a commit (docs/decisions/0002-dev-stack.md).
 */
export function seedFile(projectRoot: string, stack: string): string {
    return path.join(projectRoot, "stacks", "seeds", `${stack}.yaml`);
}

/**
 * Creates the stack file from its seed when the file is missing and a seed exists. Returns a sentence
 * for the log when it did, else undefined. Never overwrites: the copy is linked into place, so a
 * concurrent first run or an edit made meanwhile wins over the seed.
 */
export function ensureStackFile(projectRoot: string, stack: string): string | undefined {
    const file = stackFile(projectRoot, stack);
    const seed = seedFile(projectRoot, stack);
    if (fs.existsSync(file) || !fs.existsSync(seed)) return undefined;
    const tmp = `${file}.seed-${process.pid}`;
    fs.copyFileSync(seed, tmp);
    try {
        fs.linkSync(tmp, file);
    } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
        return undefined;
    } finally {
        fs.rmSync(tmp, { force: true });
    }
    return `created ${path.relative(projectRoot, file)} from ${path.relative(projectRoot, seed)} (this machine's own copy, git-ignored)`;
}
