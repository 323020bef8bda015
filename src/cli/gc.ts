import type { Command } from "commander";
import { parseEgressConfig } from "../config";
import { engineHome, PROJECT, FleetDriver } from "../engine";
import { collectGarbage, GcReport } from "../gc";
import { action, EXIT, GlobalOptions, projectDir, UsageError } from "./context";
import { alignedTable } from "./render";
import { withWriterLock } from "./writer";

/**
 * `egress gc`: things carrying this stack's labels that state does not know (left by a crash, a
 * deleted stack file, a manual edit). Dry-run by default; `--delete` removes them. Each provider entry is
 * collected on its own: one that cannot be reached is reported and the others are still collected.
 */
export function registerGc(program: Command): void {
    program
        .command("gc")
        .description(
            "find managed proxies/VMs/volumes/pods of this stack that state does not know; dry-run unless --delete",
        )
        .option("--delete", "remove what was found")
        .addHelpText(
            "after",
            "\nEach provider entry is collected independently and reported with its orphans found/deleted or its error.\nExit codes: 0 every entry was collected, 1 at least one entry failed (could not be listed, or an orphan\ncould not be removed; the others were still collected) or the writer lock stayed held, 2 invalid config,\nunknown stack or an update is running, 3 the engine is missing.\n",
        )
        .action(
            action(async (o, cmd) => {
                const opts = cmd.optsWithGlobals() as GlobalOptions;
                // Removing things is writing: under the writer lock no update can be half-way through creating them.
                const report = o.delete
                    ? await withWriterLock(opts, "egress gc --delete", () => collect(opts, true))
                    : await collect(opts, false);
                // `orphans` (every entry's, flat) is what --json printed before per-entry results; scripts keep working.
                const json = () =>
                    JSON.stringify({ ...report, orphans: report.providers.flatMap((p) => p.orphans) }) + "\n";
                process.stdout.write(opts.json ? json() : gcText(report));
                if (!report.ok) process.exitCode = EXIT.failed;
            }),
        );
}

async function collect(opts: GlobalOptions, remove: boolean): Promise<GcReport> {
    const dir = projectDir(opts);
    const driver = new FleetDriver({ workDir: dir, stack: opts.stack, create: false });
    // Things an update is creating right now are not in state yet: never collect during an update.
    const locks = driver.liveLocks();
    if (locks.length)
        throw new UsageError(
            `an update is running on stack ${opts.stack} (pid ${locks.map((l) => `${l.pid}@${l.hostname}`).join(", ")}); run gc after it finishes`,
        );
    const raw = await driver.config();
    const cfg = parseEgressConfig({ providers: raw.providers ?? {}, pools: raw.pools ?? [] }, dir);
    const stateIds = new Set((await driver.resources()).map((r) => r.id).filter((id): id is string => !!id));
    const { installation } = await driver.installation();
    return collectGarbage(cfg.providers, {
        project: PROJECT,
        stack: opts.stack,
        installation: installation.id,
        stateIds,
        runDir: engineHome().runDir,
        delete: remove,
    });
}

/** The report for people: one line per orphan, then one row per provider entry with its counts or error. */
export function gcText(report: GcReport): string {
    const lines: string[] = [];
    for (const p of report.providers)
        for (const t of p.orphans)
            lines.push(
                `${t.removed ? "removed" : t.error ? "FAILED " : "orphan "}  ${t.provider}  ${t.type}  ${t.name}  (${t.location})${t.error ? `: ${t.error}` : ""}`,
            );
    const rows = [["PROVIDER", "KIND", "FOUND", "DELETED", "RESULT"]];
    for (const p of report.providers) {
        const failedRemovals = p.orphans.filter((t) => t.error).length;
        const result = p.error
            ? `FAILED: ${p.error}`
            : failedRemovals
              ? `FAILED: ${failedRemovals} removal(s) failed`
              : "ok";
        rows.push([
            p.provider,
            p.kind,
            p.error ? "-" : String(p.found),
            p.error || report.dryRun ? "-" : String(p.deleted),
            result,
        ]);
    }
    if (lines.length) lines.push("");
    lines.push(alignedTable(rows).trimEnd());
    const found = report.providers.reduce((n, p) => n + p.found, 0);
    const failed = report.providers.filter((p) => !p.ok).map((p) => p.provider);
    if (!found && !failed.length) lines.push("nothing to collect: everything labelled for this stack is in state");
    else if (report.dryRun && found) lines.push(`${found} orphan(s); run again with --delete to remove them`);
    if (failed.length) lines.push(`failed: ${failed.join(", ")} (the other entries were still collected)`);
    return lines.join("\n") + "\n";
}
