import type { Command } from "commander";
import { CommandLock, type LockTrouble } from "../service/cluster/command-lock";
import {
    describeCommandHolder,
    heldByCommand,
    type LeaderInfo,
    type ReplicaInfo,
    stackPrefix,
} from "../service/cluster/records";
import { parseStoreSpec, redactStoreUrl, StoreSpecError } from "../service/store";
import { GlobalOptions, UsageError } from "./context";

/**
 * Adds `--store` to a command that changes the stack. The same flag and variable `egress serve` takes;
 * no default shown from EGRESS_STORE: --help would print the URL, password and all.
 */
export function storeOption(cmd: Command): Command {
    return cmd.option(
        "--store <url>",
        "the Redis store the stack's `egress serve` replicas share (redis://…; also $EGRESS_STORE): the stack's lock is taken there too, so no replica drives the engine meanwhile",
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
 * a renewal that finds it in another's hands is said at once, loudly, on stderr.
 */
export async function holdStoreLock(
    url: string,
    opts: GlobalOptions,
    command: string,
    waitMs: number,
): Promise<{ id: string; release(): Promise<void> }> {
    const lock = await openStoreLock(url, opts.stack);
    const started = Date.now();
    let waitedFor: string | undefined;
    try {
        for (;;) {
            const holder = await lock.claim(command, (t) => process.stderr.write(troubleLine(opts.stack, t)));
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
        release: async () => {
            await lock.release();
            if (lock.lostTo)
                process.stderr.write(
                    `WARNING: \`${command}\` finished, but it had lost stack ${opts.stack}'s lock in the store to ${lock.lostTo.id} while it ran; check what that holder changed (\`egress refresh\`, GET /v1/operations)\n`,
                );
        },
    };
}

/** What a holder is told when its lock is in trouble: on stderr at once, in capitals, since a replica may now drive the engine too. */
function troubleLine(stack: string, t: LockTrouble): string {
    if (t.kind === "lost")
        return `WARNING: lost stack ${stack}'s lock in the store: ${heldByCommand(t.holder) ? describeCommandHolder(t.holder) : `replica ${t.holder.id}`} holds it now and may drive the engine while this command runs (the Pulumi lock still guards the engine's state)\n`;
    if (t.kind === "retaken")
        return `WARNING: stack ${stack}'s lock in the store ran out and was taken again (fencing token ${t.before} -> ${t.after}): a replica may have led in between\n`;
    return `WARNING: cannot renew stack ${stack}'s lock in the store for ${Math.round(t.sinceMs / 1000)}s (${t.error}): it may have run out, and a replica may lead\n`;
}
