import * as fs from "node:fs";
import * as path from "node:path";
import { ConfigError } from "../config";
import { EngineError, PACKAGE_ROOT } from "../engine";
import { type CatalogueEntry, catalogueOf, EXIT, type ProxyMember } from "../model";
import { proxyTable } from "./render";

/** Exit codes (src/model/error-catalogue.ts, where every error class finds them): re-exported for the commands. */
export { EXIT };

/** Options every command accepts. */
export interface GlobalOptions {
    stack: string;
    cwd?: string;
    json?: boolean;
    /** Seconds to wait for the stack's writer lock (src/cli/writer.ts). */
    lockWait?: string;
    /** Pulumi backend URL (sets PULUMI_BACKEND_URL for the engine; src/cli.ts). */
    backend?: string;
    /** The store replicas share (`--store` of serve, doctor and the writers; else $EGRESS_STORE): a secret. */
    store?: string;
    /** Seconds a writer's engine run, cancelled when it lost the store's lock, has before it is ended (lock-loss.ts). */
    engineKillGrace?: string;
}

/** The Pulumi project: `--cwd`, else the current directory if it has Pulumi.yaml, else egress's own root. */
export function projectDir(opts: GlobalOptions): string {
    if (opts.cwd) return path.resolve(opts.cwd);
    if (fs.existsSync(path.join(process.cwd(), "Pulumi.yaml"))) return process.cwd();
    return PACKAGE_ROOT;
}

export class UsageError extends Error {
    /** Its `--json` error.type is \"Error\": the class never named itself (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.invalid, type: "Error" };
    }
}

/**
 * An interval flag in seconds, refused (exit 2, naming the flag) unless it is a number within
 * [min, max] — or 0 when the flag may turn its loop `off`. "Absurd" is above max: a loop that never
 * runs in practice is better said as 0.
 */
export function seconds(flag: string, raw: string, range: { min: number; max: number; off?: boolean }): number {
    const v = Number(raw);
    if (range.off && v === 0 && String(raw).trim() !== "") return 0;
    if (String(raw).trim() === "" || !Number.isFinite(v) || v < range.min || v > range.max)
        throw new UsageError(
            `${flag} must be ${range.off ? "0 (off) or " : ""}a number of seconds from ${range.min} to ${range.max} (got "${raw}")`,
        );
    return v;
}

/** An operation cancelled with Ctrl-C: it carries the members state holds afterwards. */
export class InterruptedError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.interrupted, type: "InterruptedError" };
    }
    constructor(
        message: string,
        readonly proxies: ProxyMember[],
    ) {
        super(message);
        this.name = "InterruptedError";
    }
}

/**
 * A command lost the stack's lock in the store to another holder while it ran (the store was away
 * longer than the TTL and a replica or another command took it): its engine run was cancelled, and
 * ended after the grace if it had not stopped (lock-loss.ts). EXIT.lockLost.
 */
export class LockLostError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.lockLost, type: "LockLostError" };
    }
    constructor(message: string) {
        super(message);
        this.name = "LockLostError";
    }
}

/**
 * The exit code that classifies an error (EXIT): the same for every command, `egress serve` included. Each
 * error class declares its own (src/model/error-catalogue.ts); anything else (a bug, a library's error) is
 * a failed command.
 */
export function exitCodeOf(e: unknown): number {
    return catalogueOf(e)?.exitCode ?? EXIT.failed;
}

/** Prints an error the way the user needs it and returns the exit code that classifies it. */
export function reportError(e: unknown, json: boolean | undefined): number {
    const code = exitCodeOf(e);
    const message = e instanceof Error ? e.message : String(e);
    const proxies = e instanceof InterruptedError ? { proxies: e.proxies } : {};
    if (json)
        process.stdout.write(
            JSON.stringify({
                ok: false,
                error: {
                    type: catalogueOf(e)?.type ?? (e as Error)?.name ?? "Error",
                    message,
                    ...(e instanceof ConfigError ? { problems: e.problems } : {}),
                },
                ...proxies,
            }) + "\n",
        );
    else {
        process.stderr.write(`error: ${message}\n`);
        if (e instanceof InterruptedError) process.stdout.write(proxyTable(e.proxies));
    }
    if (e instanceof EngineError && !e.interrupted && !json)
        process.stderr.write(
            "hint: `egress doctor` checks the engine; `egress refresh` reconciles state with what runs.\n",
        );
    return code;
}

/** Wraps a command action: runs it, prints errors, sets the exit code. */
export function action<A extends unknown[]>(fn: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
    return async (...args: A) => {
        const cmd = args[args.length - 1] as { optsWithGlobals(): GlobalOptions };
        try {
            await fn(...args);
        } catch (e) {
            process.exitCode = reportError(e, cmd.optsWithGlobals().json);
        }
    };
}
