/**
 * The Pulumi CLI under an engine home, found once per process and its version remembered between processes.
 *
 * `PulumiCommand.get` runs `pulumi version` to learn the CLI's version: a Go binary's start, about 0.2 s of
 * CPU, in every process that opens a stack (each CLI command that reads or changes one, each service
 * start). The version only changes when the binary does, so the answer is kept beside it in
 * `bin/pulumi.version.json` with the binary's identity (device, inode, size, modification time). A binary
 * rebuilt, replaced or relinked (`npm run setup`, a `pulumi` on PATH) no longer matches and is asked again.
 * The file is a cache: unreadable, foreign or stale, it is ignored and rewritten.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { createRequire } from "node:module";
import type { PulumiCommand } from "@pulumi/pulumi/automation";
import { automation } from "./automation";

/**
 * What the cache file holds: the version `pulumi version` printed for the binary with this identity. The
 * identity, not the path, names the binary: engine homes that link one `bin` directory (each test
 * project's) share one entry.
 */
interface Remembered {
    identity: string;
    version: string;
}

const CACHE_FILE = "pulumi.version.json";

/** The binary's identity: a rebuild (new inode or mtime) or a relink (another target) changes it. */
function identityOf(binary: string): string {
    const s = fs.statSync(binary); // follows a symlink: its target's identity
    return [s.dev, s.ino, s.size, s.mtimeMs].join(":");
}

function remembered(cache: string, identity: string): string | undefined {
    try {
        const r = JSON.parse(fs.readFileSync(cache, "utf8")) as Partial<Remembered>;
        return r.identity === identity && typeof r.version === "string" ? r.version : undefined;
    } catch {
        return undefined;
    }
}

function remember(cache: string, r: Remembered): void {
    const tmp = `${cache}.${process.pid}.tmp`;
    try {
        fs.writeFileSync(tmp, JSON.stringify(r));
        fs.renameSync(tmp, cache); // whole or not at all, whoever else writes it at once
    } catch {
        fs.rmSync(tmp, { force: true }); // a read-only home: asked again next time, nothing else changes
    }
}

/**
 * A PulumiCommand for a version already checked: what `PulumiCommand.get` returns, without its `pulumi
 * version`. Its constructor is private in the types only; the SDK's own `semver` parses the version.
 */
function commandOf(binary: string, version: string): PulumiCommand {
    const semver = createRequire(require.resolve("@pulumi/pulumi/package.json"))("semver") as {
        parse(v: string): unknown;
    };
    const Ctor = automation().PulumiCommand as unknown as new (command: string, version: unknown) => PulumiCommand;
    return new Ctor(binary, semver.parse(version));
}

/** The CLI under `root`: from the cache file when it names this binary, else asked (and remembered). */
export async function findPulumiCommand(root: string): Promise<PulumiCommand> {
    const binary = path.resolve(root, "bin", "pulumi"); // where PulumiCommand.get({ root }) looks
    let identity: string | undefined;
    try {
        identity = identityOf(binary);
    } catch {
        // Missing: PulumiCommand.get reports it as it always has.
    }
    const cache = path.join(root, "bin", CACHE_FILE);
    const known = identity && remembered(cache, identity);
    if (known) return commandOf(binary, known);
    const found = await automation().PulumiCommand.get({ root });
    if (identity && found.version) remember(cache, { identity, version: found.version.version });
    return found;
}

const commands = new Map<string, Promise<PulumiCommand>>();

/**
 * The Pulumi CLI under `root`, once per process: a service opens a workspace per stack (shards) and again
 * after every failure. A failed lookup is not kept, so `npm run setup` run meanwhile is seen on the next try.
 */
export function pulumiCommandIn(root: string): Promise<PulumiCommand> {
    let found = commands.get(root);
    if (!found) {
        found = findPulumiCommand(root);
        commands.set(root, found);
        found.catch(() => commands.delete(root));
    }
    return found;
}
