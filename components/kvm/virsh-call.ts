/** The shape of one virsh call: how it is made (`Virsh`) and how it is told (`VirshCall`, for logs). */
import type { LibvirtStage } from "./libvirt-errors";

/** Per-call options of `Virsh`. */
export interface VirshCallOptions {
    /** Kill virsh after this long. @default 60000 */
    timeoutMs?: number;
    /** Kills virsh and stops retrying when aborted (a caller's deadline, e.g. the provider check's). */
    signal?: AbortSignal;
}

/** Runs one virsh command (argv after `virsh -c URI`) and resolves its stdout. */
export type Virsh = (args: string[], opts?: VirshCallOptions) => Promise<string>;

/**
 * One virsh call as it may be logged: which commands, where, how long, how it ended. Never arguments
 * (they carry domain XML, metadata bodies and the URI with key file paths) and never output.
 */
export interface VirshCall {
    /** The virsh command names, `;`-joined for a batch: `list`, `echo;domblklist;echo;vol-info`. */
    command: string;
    host: string;
    /** `user@address:port`. */
    target: string;
    member?: string;
    durationMs: number;
    /** virsh's exit code; null when it did not exit by itself (killed at its timeout, not installed). */
    exitCode: number | null;
    signal?: string;
    ok: boolean;
    /** The stage of a failure (LibvirtStage), unset when ok. */
    stage?: LibvirtStage;
}

/** The command names of a virsh argv (a one-string argv is a `;`-separated batch), for VirshCall. */
export function virshCommandNames(args: string[]): string {
    const commands = args.length === 1 ? args[0].split(";") : [args[0] ?? ""];
    return commands
        .map((c) => c.trim().split(/\s+/)[0])
        .filter(Boolean)
        .join(";");
}
