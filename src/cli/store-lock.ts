import type { Command } from "commander";
import { CommandLock, type LockTrouble } from "../state/cluster/command-lock";
import {
    describeCommandHolder,
    heldByCommand,
    type LeaderInfo,
    type ReplicaInfo,
    stackPrefix,
} from "../state/cluster/records";
import { parseStoreSpec, redactStoreUrl, StoreSpecError } from "../state/redis/url";
import { GlobalOptions, LockLostError, UsageError } from "./context";
import { abandonEngineRuns, DEFAULT_ENGINE_KILL_GRACE_SECONDS, engineKillGraceMs, setKillGrace } from "./lock-loss";
import { type CatalogueEntry, EXIT } from "../model/error-catalogue";

/**
 * Adds `--store` to a command that changes the stack. The same flag and variable `egress serve` takes;
 * no default shown from EGRESS_STORE: --help would print the URL, password and all.
 */
export function storeOption(cmd: Command): Command {
    return cmd
        .option(
            "--store <url>",
            "the Redis store the stack's `egress serve` replicas share (redis://… or redis+sentinel://…; also $EGRESS_STORE): the stack's lock is taken there too, so no replica drives the engine meanwhile",
        )
        .option(
            "--engine-kill-grace <seconds>",
            `with --store: a command that loses the stack's lock to another holder cancels its engine run; one still running this long after is ended (1 to 3600; default ${DEFAULT_ENGINE_KILL_GRACE_SECONDS}; also $EGRESS_ENGINE_KILL_GRACE). Exit code 4`,
        );
}

/**
 * `--store`, else $EGRESS_STORE, else memory; a bad one is a usage error (exit 2) naming where it came
 * from, with the password masked. `serve` and the writers parse it here alike.
 */
export function storeSpecOf(flag: string | undefined) {
    try {
        return flag !== undefined
            ? parseStoreSpec(flag, "--store")
            : parseStoreSpec(process.env.EGRESS_STORE, "EGRESS_STORE");
    } catch (e) {
        if (e instanceof StoreSpecError) throw new UsageError(e.message);
        throw e;
    }
}

/** The Redis URL a command was given (a secret), or undefined without one (memory: nothing shared). */
export function storeUrlOf(opts: GlobalOptions): string | undefined {
    const spec = storeSpecOf(opts.store);
    return spec.kind === "redis" ? spec.url : undefined;
}

/** The replica that leads a stack, with its heartbeat record when it has one (its address and host). */
export interface ReplicaLeader {
    leader: LeaderInfo;
    replica?: ReplicaInfo;
}

/** "replica <id> on <host> (<url>)". */
export function describeReplicaLeader(l: ReplicaLeader): string {
    return `replica ${l.leader.id}${l.replica ? ` on ${l.replica.host} (${l.replica.url})` : ""}`;
}

/**
 * A replica of `egress serve` leads the stack through the store: a command that would run the engine
 * beside it is refused (the same exit code as a writer lock held too long: 1).
 */
export class ReplicaLeadsError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "ReplicaLeadsError" };
    }
    constructor(
        readonly stack: string,
        readonly leading: ReplicaLeader,
        command: string,
    ) {
        super(
            `stack ${stack} is led by ${describeReplicaLeader(leading)} since ${leading.leader.since}, through the store: \`${command}\` would drive the engine beside it. Change the fleet through the service instead (its API, or \`egress scale <pool> <n>\`, which queues the request for the leader), or stop the stack's replicas first`,
        );
        this.name = "ReplicaLeadsError";
    }
}

/** Another egress command held the stack's lock in the store for longer than this one would wait. */
export class StoreLockBusyError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "StoreLockBusyError" };
    }
    constructor(stack: string, holder: LeaderInfo, waitedMs: number) {
        super(
            `stack ${stack} is being changed by ${describeCommandHolder(holder)}, which holds its lock in the store; waited ${Math.round(waitedMs / 1000)}s (--lock-wait to wait longer)`,
        );
        this.name = "StoreLockBusyError";
    }
}

/** Connects to the store (a StoreUnavailableError within 2 s when it does not answer: exit 75). */
export function openStoreLock(url: string, stack: string): Promise<CommandLock> {
    return CommandLock.open(url, stackPrefix(stack));
}

/** The replica leading the stack now, if one does (not a command: a command holding it is no leader to send to). */
export async function replicaLeader(lock: CommandLock): Promise<ReplicaLeader | undefined> {
    const { leader, replicas } = await lock.cluster();
    if (!leader || heldByCommand(leader)) return undefined;
    return { leader, replica: replicas.find((r) => r.id === leader.id) };
}

/**
 * Takes the stack's lock in the store for `command`, waiting up to `waitMs` while another command holds
 * it (saying whom it waits for); a replica holding it is a ReplicaLeadsError. Renewed until `release`;
 * a renewal that finds it in another's hands stops the command's engine runs (stopOnLoss), one that
 * cannot renew it past its TTL is a warning.
 */
export async function holdStoreLock(
    url: string,
    opts: GlobalOptions,
    command: string,
    waitMs: number,
): Promise<{ id: string; release(): Promise<void> }> {
    const graceMs = engineKillGraceMs(opts); // a bad one is refused before anything is taken
    setKillGrace(graceMs, () =>
        process.stderr.write(
            `the cancelled engine run of \`${command}\` did not end within ${graceMs / 1000}s: its processes were ended\n`,
        ),
    );
    const lock = await openStoreLock(url, opts.stack);
    const started = Date.now();
    let waitedFor: string | undefined;
    try {
        for (;;) {
            const holder = await lock.claim(command, (t) =>
                t.kind === "lost" ? stopOnLoss(opts.stack, command, t.holder, graceMs) : warn(opts.stack, t),
            );
            if (holder.id === lock.id) break;
            if (!heldByCommand(holder)) {
                const { replicas } = await lock.cluster();
                throw new ReplicaLeadsError(
                    opts.stack,
                    { leader: holder, replica: replicas.find((r) => r.id === holder.id) },
                    command,
                );
            }
            if (Date.now() - started >= waitMs) throw new StoreLockBusyError(opts.stack, holder, Date.now() - started);
            if (waitedFor !== holder.id)
                process.stderr.write(
                    `waiting for stack ${opts.stack}: ${describeCommandHolder(holder)} holds its lock in the store ${redactStoreUrl(url)}\n`,
                );
            waitedFor = holder.id;
            await new Promise((r) => setTimeout(r, Math.max(1, Math.min(250, waitMs - (Date.now() - started)))));
        }
    } catch (e) {
        lock.close();
        throw e;
    }
    return {
        id: lock.id,
        release: () => lock.release(),
    };
}

/** "replica <id>" or "`egress up` (cli:…) …": who holds the lock now. */
function describeHolder(holder: LeaderInfo): string {
    return heldByCommand(holder) ? describeCommandHolder(holder) : `replica ${holder.id}`;
}

/**
 * The lock is another's now (a replica or another command leads, and may drive the engine): this
 * command stops its engine run as a service leader does (lock-loss.ts), says so at once, and ends with
 * a LockLostError (withWriterLock).
 */
function stopOnLoss(stack: string, command: string, holder: LeaderInfo, graceMs: number): void {
    const running = abandonEngineRuns(
        new LockLostError(
            `\`${command}\` lost stack ${stack}'s lock in the store to ${describeHolder(holder)} while it ran, and stopped its engine run (state keeps what the engine saved; the next writer finishes what it left pending). Check what that holder changes (\`egress refresh\`, GET /v1/operations) before running it again`,
        ),
    );
    process.stderr.write(
        `LOST stack ${stack}'s lock in the store: ${describeHolder(holder)} holds it now; ${running ? `cancelling this command's engine run (it saves state; ended after ${graceMs / 1000}s if still running) and starting no other` : "no engine run in progress, and this command starts none"}\n`,
    );
}

/** The lock may have run out (not known to be another's): said on stderr at once, in capitals, since a replica may have led. */
function warn(stack: string, t: Exclude<LockTrouble, { kind: "lost" }>): void {
    process.stderr.write(
        t.kind === "retaken"
            ? `WARNING: stack ${stack}'s lock in the store ran out and was taken again (fencing token ${t.before} -> ${t.after}): a replica may have led in between\n`
            : `WARNING: cannot renew stack ${stack}'s lock in the store for ${Math.round(t.sinceMs / 1000)}s (${t.error}): it may have run out, and a replica may lead\n`,
    );
}
