import type { Command } from "commander";
import { parseEgressConfig } from "../config";
import { engineHome, StackDriver } from "../engine";
import { collectorFor, knownToState, ManagedThing } from "../gc";
import { action, GlobalOptions, projectDir, UsageError } from "./context";
import { withWriterLock } from "./writer";

/**
 * `egress gc`: things carrying this stack's labels that state does not know (left by a crash, a
 * deleted stack file, a manual edit). Dry-run by default; `--delete` removes them.
 */
export function registerGc(program: Command): void {
    program
        .command("gc")
        .description("find managed proxies/VMs/volumes/pods of this stack that state does not know; dry-run unless --delete")
        .option("--delete", "remove what was found")
        .action(action(async (o, cmd) => {
            const opts = cmd.optsWithGlobals() as GlobalOptions;
            // Removing things is writing: under the writer lock no update can be half-way through creating them.
            if (o.delete) await withWriterLock(opts, "egress gc --delete", () => collect(opts, true));
            else await collect(opts, false);
        }));
}

async function collect(opts: GlobalOptions, remove: boolean): Promise<void> {
    const dir = projectDir(opts);
    const driver = new StackDriver({ workDir: dir, stack: opts.stack, create: false });
    // Things an update is creating right now are not in state yet: never collect during an update.
    const locks = driver.liveLocks();
    if (locks.length) throw new UsageError(`an update is running on stack ${opts.stack} (pid ${locks.map((l) => `${l.pid}@${l.hostname}`).join(", ")}); run gc after it finishes`);
    const raw = await driver.config();
    const cfg = parseEgressConfig({ providers: raw.providers ?? {}, pools: raw.pools ?? [] }, dir);
    const stateIds = new Set((await driver.resources()).map((r) => r.id).filter((id): id is string => !!id));
    const orphans: (ManagedThing & { removed?: boolean; error?: string })[] = [];
    for (const [name, entry] of Object.entries(cfg.providers)) {
        const collector = collectorFor(name, entry, engineHome().runDir);
        for (const thing of await collector.list({ project: "egress", stack: opts.stack })) {
            if (knownToState(thing, stateIds)) continue;
            const row: (typeof orphans)[number] = { ...thing };
            if (remove) {
                try {
                    await collector.remove(thing);
                    row.removed = true;
                } catch (e) {
                    row.error = (e as Error).message;
                }
            }
            orphans.push(row);
        }
    }
    if (opts.json) process.stdout.write(JSON.stringify({ ok: orphans.every((x) => !x.error), dryRun: !remove, orphans }) + "\n");
    else if (!orphans.length) process.stdout.write("nothing to collect: everything labelled for this stack is in state\n");
    else {
        for (const t of orphans) process.stdout.write(`${t.removed ? "removed" : t.error ? "FAILED " : "orphan "}  ${t.provider}  ${t.type}  ${t.name}  (${t.location})${t.error ? `: ${t.error}` : ""}\n`);
        if (!remove) process.stdout.write(`${orphans.length} orphan(s); run again with --delete to remove them\n`);
    }
    if (orphans.some((x) => x.error)) process.exitCode = 1;
}
