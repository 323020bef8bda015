/**
 * The errors the engine layer throws, and which of them are worth retrying. Every message is free of
 * backend passwords: the Pulumi CLI names its backend URL, credentials included, in errors such as
 * "unable to open bucket postgres://user:pass@host/db: failed to ping PostgreSQL".
 */
import { ConcurrentUpdateError } from "@pulumi/pulumi/automation/errors";
import { maskUrlPasswords } from "../log/redact";
import { type CatalogueEntry, EXIT } from "../model/error-catalogue";

export type OperationKind = "up" | "preview" | "refresh" | "destroy";

/** An engine operation failed; `message` carries the engine's own error lines, never the whole log. */
export class EngineError extends Error {
    /** Exit 75 when the backend was unreachable (retry as it is), else 1 (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: this.backendUnreachable ? EXIT.unavailable : EXIT.failed, type: "EngineError" };
    }
    /** True when another update held the stack lock: retrying later may succeed. */
    readonly locked: boolean;
    /** True when the backend could not be reached (backendUnreachable): retrying later may succeed. */
    readonly backendUnreachable: boolean;
    constructor(
        readonly kind: OperationKind,
        message: string,
        readonly cause?: unknown,
        readonly interrupted = false,
    ) {
        const text = maskUrlPasswords(message);
        super(interrupted ? `${kind} interrupted: ${text}` : `${kind} failed: ${text}`);
        this.name = "EngineError";
        this.locked = cause instanceof ConcurrentUpdateError;
        this.backendUnreachable = cause instanceof BackendUnreachableError;
    }

    /** Worth retrying as it is: someone else's update, or a backend that is down for now. */
    get transient(): boolean {
        return this.locked || this.backendUnreachable;
    }
}

/**
 * The stack's backend (a PostgreSQL server, an object store) did not answer: nothing was changed by
 * this call, and the same call may succeed later. Its message names the backend without its password.
 */
export class BackendUnreachableError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.unavailable, type: "BackendUnreachableError" };
    }
    readonly transient = true;
    constructor(
        readonly backend: string,
        detail: string,
    ) {
        super(
            `the Pulumi backend ${backend} cannot be reached (${maskUrlPasswords(detail)}); the operation can be retried once it answers`,
        );
        this.name = "BackendUnreachableError";
    }
}

/** The Pulumi CLI is not installed where egress looks for it (a prerequisite, not a failed operation). */
export class EngineMissingError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.prerequisite, type: "EngineMissingError" };
    }
    constructor(message: string) {
        super(message);
        this.name = "EngineMissingError";
    }
}

/** The stack does not exist in the backend (commands that only read or remove never create one). */
export class StackMissingError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.invalid, type: "StackMissingError" };
    }
    constructor(stack: string) {
        super(
            `stack "${stack}" does not exist in this backend; run \`egress up --stack ${stack}\` first (or check --stack)`,
        );
        this.name = "StackMissingError";
    }
}

/** The CLI's words for "the backend did not answer" (connection, not permission: a wrong password is no outage). */
const UNREACHABLE =
    /failed to ping PostgreSQL: (?!pq: password)|dial tcp|connection refused|bad connection|connection reset|i\/o timeout|no such host|server closed the connection|terminating connection|the database system is (starting up|shutting down)|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|Connection terminated|timeout expired/i;
/**
 * …said about state access, not about a provider the program talks to. Every read, write and listing of
 * a diy backend (PostgreSQL, object stores) goes through go-cloud's blob package, whose errors read
 * `blob (key "…") (code=…)` or, for a listing, `could not list bucket: blob (code=…)` (the lock check an
 * update starts with: issue 35's failed scale).
 */
const ABOUT_STATE =
    /unable to open bucket|could not list bucket|PostgreSQL|blob \((key|code=)|checkpoint|snapshot|meta\.yaml|pq: /i;

/**
 * The error as a BackendUnreachableError when it says the (non-file) backend did not answer; else the
 * same error with any URL password masked in its message (it is printed and logged as it is).
 */
export function classifyBackendError(e: unknown, backend: { kind: string; shown: string }): unknown {
    const text = String((e as { stderr?: string })?.stderr ?? "") + "\n" + String((e as Error)?.message ?? e);
    if (backend.kind !== "file" && UNREACHABLE.test(text) && ABOUT_STATE.test(text))
        return new BackendUnreachableError(backend.shown, firstErrorLine(text));
    if (e instanceof Error) e.message = maskUrlPasswords(e.message);
    return e;
}

/** The line that says what did not answer, else the first `error:` line, else the first line. */
function firstErrorLine(text: string): string {
    const lines = text.split("\n").map((l) => l.trim());
    const line =
        lines.find((l) => UNREACHABLE.test(l) && ABOUT_STATE.test(l)) ??
        lines.find((l) => /^error:/i.test(l)) ??
        lines.find((l) => l) ??
        "";
    return line.replace(/^(stderr:\s*)?error:\s*/i, "");
}
