import type { Stack } from "@pulumi/pulumi/automation";
import { pendingCreateUndoers } from "../../components/registry";
import type { Installation, ProxyMember } from "../model";
import { membersOf } from "./checkpoint";
import type { StateResource } from "./state";
import { IDENTITY_TYPE } from "./installation";
import { repairFileBackend } from "./backend-repair";
import { killLeftovers } from "./leftovers";
import { removeStaleLocks, stackLocks } from "./locks";
import type { StateBackend } from "./backend";
import { clearingDeadLocks, liveLockHolders } from "./backend-locks";

interface Deployment {
    resources?: StateResource[];
    pending_operations?: { type: string; resource: StateResource }[];
}

/**
 * Ends what a dead run left on this host: engine processes of owners that are gone (by our marker),
 * file-backend locks of dead holders and half-written backend files (backend-repair.ts). Safe before every command: a live run's processes and locks are
 * never touched. Returns a line per thing done, for the log.
 */
export function clearDeadRuns(backendDir: string | undefined, stack: string): string[] {
    const done: string[] = [];
    const killed = killLeftovers();
    if (killed.length)
        done.push(
            `ended ${killed.length} engine process(es) of dead run(s): ${killed.map((k) => `pid ${k.pid} (${k.command})`).join(", ")}`,
        );
    const stale = removeStaleLocks(backendDir, stack);
    if (stale.length)
        done.push(
            `removed ${stale.length} stale lock file(s) of the stack, left by dead pid(s) ${stale.map((l) => l.pid).join(", ")}`,
        );
    if (!stackLocks(backendDir, stack).some((l) => l.alive)) done.push(...repairFileBackend(backendDir, stack));
    return done;
}

/**
 * Finishes what a killed update left in state. A pending create is a resource the provider may have
 * made but the engine never recorded: each kind's undo finds it by its deterministic name and removes it
 * (the next `up` creates it again, cleanly). Then one refresh clears the pending operations and notices
 * members that died. Kinds without an undo are reported: `egress gc` is the safety net for those.
 *
 * Each undo runs once. The refresh alone goes through clearingDeadLocks: a dead run's lock row in a
 * PostgreSQL backend fails it once, and a retry of the whole pass would find every proxy already
 * stopped and report "nothing was started" for each, losing the lines of what the first pass stopped.
 */
export async function finishPendingOperations(
    stack: Stack,
    backend: StateBackend,
    stackName: string,
    installation: Installation,
    onNotice: (line: string) => void,
): Promise<string[]> {
    const done: string[] = [];
    // Before any undo: a live holder (another replica's `up` on a shared backend) is making these now.
    const live = await liveLockHolders(backend, stackName);
    if (live.length)
        return [
            `stack is locked by live pid(s) ${live.map((l) => `${l.pid ?? "?"}@${l.hostname ?? "?"}`).join(", ")}; leaving it alone`,
        ];
    const dep = (await stack.exportStack()).deployment as Deployment | undefined;
    const pending = dep?.pending_operations ?? [];
    if (!pending.length) return done;
    const undoers = pendingCreateUndoers();
    const providers = (await stack.getAllConfig())["egress:providers"]?.value;
    // A pending create whose resource a later run has recorded since: what runs under that name is the
    // recorded one, and undoing by name would stop a healthy member.
    const recorded = new Set((dep?.resources ?? []).filter((r) => r.id).map((r) => r.urn));
    // Newest first, as a delete would go: a VM is undone before the disks it may be using.
    for (const op of [...pending].reverse()) {
        if (op.type !== "creating") continue;
        if (recorded.has(op.resource.urn)) {
            done.push(`pending create of ${op.resource.urn}: created and recorded by a later run; kept`);
            continue;
        }
        if (op.resource.type === IDENTITY_TYPE) {
            done.push(
                `pending create of ${op.resource.urn}: the installation identity exists only in state; nothing to undo`,
            );
            continue;
        }
        const undo = undoers[op.resource.type];
        if (!undo) {
            done.push(
                `pending create of ${op.resource.urn} cannot be checked by egress itself; run \`egress gc\` to find what it may have left`,
            );
            continue;
        }
        try {
            const inputs = plainInputs(op.resource.inputs ?? {}) as Record<string, unknown>;
            const removed = await undo(inputs, installation, providers);
            done.push(
                removed.length
                    ? `pending create of ${op.resource.urn}: ${removed.join("; ")}`
                    : `pending create of ${op.resource.urn}: nothing was started`,
            );
        } catch (e) {
            // Reported, not fatal: the refresh below still clears the operation, and gc finds what stayed.
            done.push(
                `pending create of ${op.resource.urn}: could not undo (${(e as Error).message.split("\n")[0]}); run \`egress gc\``,
            );
        }
    }
    await clearingDeadLocks(stack, onNotice, () => stack.refresh({ clearPendingCreates: true }));
    done.push(
        `cleared ${pending.length} pending operation(s) (${[...new Set(pending.map((p) => p.type))].join(", ")}) with a refresh`,
    );
    return done;
}

/** Pulumi's marker of a secret value in exported state (`{<sig>: <secret sig>, plaintext: <JSON>}`). */
const SECRET_SIG = "4dabf18193072939515e22adb298388d";

/**
 * Inputs as the provider saw them: the export (`--show-secrets`) wraps each secret in a signature
 * object holding its JSON plaintext; undos get plain values (a KVM key, for example).
 */
export function plainInputs(v: unknown): unknown {
    if (Array.isArray(v)) return v.map(plainInputs);
    if (v && typeof v === "object") {
        const o = v as Record<string, unknown>;
        if (SECRET_SIG in o && typeof o.plaintext === "string") return plainInputs(JSON.parse(o.plaintext));
        return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, plainInputs(x)]));
    }
    return v;
}

/**
 * The members state knows, from each member component's registered outputs rather than the stack
 * output: after a cancelled or failed update the stack output still lists the previous run's members,
 * while the components hold every member that was actually created.
 */
export async function membersInState(stack: Stack): Promise<ProxyMember[]> {
    const dep = (await stack.exportStack()).deployment as Deployment | undefined;
    return membersOf(dep?.resources ?? []);
}
