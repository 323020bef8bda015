import type { Command } from "commander";
import { planMembers } from "../model";
import { loadStackConfig } from "../config";
import { ForgetResult, FleetDriver } from "../engine";
import { action, EXIT, GlobalOptions, projectDir, UsageError } from "./context";
import { alignedTable } from "./render";
import { withWriterLock } from "./writer";

/**
 * `egress forget <member>`: the way out when a member's host is unreachable or gone for good, so its
 * delete can never succeed and would block every update. State drops the member; what it ran stays
 * behind, `egress gc` lists it and `gc --delete` removes it once reachable.
 */
export function registerForget(program: Command): void {
    program
        .command("forget")
        .argument("<member>", "member id as listed by `egress outputs` (`<pool>-<index>`)")
        .description(
            "remove a member from state without deleting what it runs (for a host that is unreachable or gone); says what stays behind",
        )
        .option("-y, --yes", "confirm: without it, only show what would be forgotten and what stays behind")
        .addHelpText(
            "after",
            [
                "",
                "What stays behind (a process, a VM and its volumes, an instance, a pod) keeps running and is no longer",
                "managed: `egress gc` lists it, `egress gc --delete` removes it once its host answers again. If the",
                "config still plans the member, the next `up` creates it again: lower the pool's replicas (or move its",
                "placement) first. To keep a whole provider entry's things on delete instead, set `retainOnDelete: true`",
                "on the entry before its host goes away.",
                "",
                "Exit codes: 0 forgotten, 1 state could not be changed (pending operations, other resources refer to",
                "it, the writer lock stayed held), 2 no such member in state, or --yes missing (it then only shows what",
                "it would do); nothing was changed in both cases.",
                "",
            ].join("\n"),
        )
        .action(
            action(async (member: string, o: { yes?: boolean }, cmd) => {
                const opts = cmd.optsWithGlobals() as GlobalOptions;
                // Only writing needs the lock; showing what would happen reads state as it is.
                const result = o.yes
                    ? await withWriterLock(opts, `egress forget ${member}`, () => forget(opts, member, true))
                    : await forget(opts, member, false);
                const stillPlanned = plannedMembers(opts).has(member);
                const unconfirmed = result.applied
                    ? {}
                    : { error: { type: "UsageError", message: `nothing was changed: pass --yes to forget ${member}` } };
                if (opts.json)
                    process.stdout.write(
                        JSON.stringify({ ok: result.applied, ...result, stillPlanned, ...unconfirmed }) + "\n",
                    );
                else process.stdout.write(forgetText(result, stillPlanned));
                if (!result.applied) {
                    if (!opts.json) process.stderr.write(`error: ${unconfirmed.error!.message}\n`);
                    process.exitCode = EXIT.invalid;
                }
            }),
        );
}

async function forget(opts: GlobalOptions, member: string, apply: boolean): Promise<ForgetResult> {
    const driver = new FleetDriver({
        workDir: projectDir(opts),
        stack: opts.stack,
        create: false,
        onNotice: (line) => process.stderr.write(`note: ${line}\n`),
    });
    const locks = driver.liveLocks();
    if (locks.length)
        throw new UsageError(
            `an update is running on stack ${opts.stack} (pid ${locks.map((l) => `${l.pid}@${l.hostname}`).join(", ")}); forget after it finishes`,
        );
    return driver.forget(member, apply);
}

/** Members the stack file still plans (a forgotten one among them comes back with the next `up`). */
function plannedMembers(opts: GlobalOptions): Set<string> {
    try {
        return new Set(
            loadStackConfig(projectDir(opts), opts.stack).pools.flatMap((p) => planMembers(p).map((m) => m.name)),
        );
    } catch {
        return new Set(); // an invalid stack file is reported by the commands that use it
    }
}

export function forgetText(r: ForgetResult, stillPlanned: boolean): string {
    const lines = [
        r.applied
            ? `forgot member ${r.member}: ${r.forgotten.length} resource(s) removed from state`
            : `would forget member ${r.member} (${r.forgotten.length} resource(s) in state)`,
    ];
    if (r.staysBehind.length) {
        lines.push(
            `${r.applied ? "These stay behind" : "These would stay behind"}, still running/existing and no longer managed:`,
        );
        lines.push(
            alignedTable([
                ["TYPE", "NAME", "ID"],
                ...r.staysBehind.map((t) => [t.type, t.name, t.id ?? "-"]),
            ]).trimEnd(),
        );
        lines.push("`egress gc` lists them; `egress gc --delete` removes them once their host answers.");
    } else lines.push("Nothing real was recorded for it: nothing stays behind.");
    if (stillPlanned)
        lines.push(
            `note: the config still plans ${r.member}: the next \`up\` creates it again. Lower the pool's replicas (or change its placement) first.`,
        );
    return lines.join("\n") + "\n";
}
