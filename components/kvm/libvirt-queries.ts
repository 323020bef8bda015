/**
 * Read-only questions to one libvirt host over a session's `virsh` (components/kvm/libvirt.ts): volumes,
 * domains and their states, each "not found" turned into an answer.
 */
import { isNotFound } from "./libvirt-errors";
import type { Virsh } from "./virsh-call";

/** `virsh vol-path`, or undefined when the volume does not exist. */
export async function volumePath(virsh: Virsh, pool: string, name: string): Promise<string | undefined> {
    try {
        return (await virsh(["vol-path", "--pool", pool, name])).trim();
    } catch (e) {
        if (isNotFound(e)) return undefined;
        throw e;
    }
}

/** Names of the volumes of a pool (refreshed first so files made outside libvirt show up). */
export async function listVolumes(virsh: Virsh, pool: string): Promise<string[]> {
    await virsh(["pool-refresh", pool]);
    const out = await virsh(["vol-list", "--pool", pool]);
    // `vol-list` prints "name   path" rows; names are ours (no spaces).
    return out
        .split("\n")
        .map((l) => l.trim().split(/\s+/)[0])
        .filter((n) => n && n !== "Name" && !/^-+$/.test(n));
}

/** Names of the defined domains, running or not (`list --all --name`). */
export async function listDomains(virsh: Virsh): Promise<string[]> {
    return (await virsh(["list", "--all", "--name"]))
        .split("\n")
        .map((s) => s.trim())
        .filter(Boolean);
}

/** What libvirt says a domain is doing; `missing` when it is not defined. */
export type DomainState =
    "running" | "paused" | "shut off" | "crashed" | "in shutdown" | "pmsuspended" | "missing" | "unknown";

/** States in which the guest serves nothing until someone acts: the member counts as gone. */
export const GONE_STATES: readonly DomainState[] = [
    "missing",
    "shut off",
    "crashed",
    "paused",
    "in shutdown",
    "pmsuspended",
];

/**
 * `virsh domstate`, normalized. `blocked` (waiting on I/O) is running; `idle`/`no state` are unknown.
 * Connection failures throw (a host we cannot reach says nothing about its guests).
 */
export async function domainState(virsh: Virsh, name: string): Promise<DomainState> {
    let out: string;
    try {
        out = (await virsh(["domstate", name], { timeoutMs: 20000 })).trim().toLowerCase();
    } catch (e) {
        if (isNotFound(e)) return "missing";
        throw e;
    }
    return normalizeState(out);
}

function normalizeState(out: string): DomainState {
    if (out === "blocked") return "running";
    const known: DomainState[] = ["running", "paused", "shut off", "crashed", "in shutdown", "pmsuspended"];
    return known.find((s) => out === s) ?? "unknown";
}

/**
 * Every defined domain of a host with its state, in one call (`virsh list --all`): what the service's
 * reconcile loop asks each round, so its cost does not grow with the member count. Connection failures
 * throw. Rows are `<id|->  <name>  <state words>`; our names have no spaces.
 */
export async function listDomainStates(virsh: Virsh, timeoutMs = 20000): Promise<Map<string, DomainState>> {
    const out = await virsh(["list", "--all"], { timeoutMs });
    const states = new Map<string, DomainState>();
    for (const line of out.split("\n")) {
        const m = /^\s*(\S+)\s+(\S+)\s+(.+?)\s*$/.exec(line);
        if (!m || m[1] === "Id" || /^-+$/.test(m[1])) continue;
        states.set(m[2], normalizeState(m[3].toLowerCase()));
    }
    return states;
}
