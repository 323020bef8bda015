/**
 * The CLI's error catalogue: every egress error class says, beside its own definition, which exit code
 * a command that fails with it ends with and what `--json` prints as its `error.type`
 * (docs/operations.md, "Exit codes"). The codes live here, at the bottom layer, rather than in src/cli:
 * errors are thrown from every layer (components, config, engine, service), and none of them may import
 * the CLI. src/cli/context.ts reads the entries (`exitCodeOf`, `reportError`); nothing else chooses a code.
 *
 * Why an accessor on each class rather than one table: a table that names every class would have to
 * import components' and the service's files into one module (the layers forbid src/ reaching a kind's
 * own files), and a class added without a row would fall silently to `failed`. An accessor lives on the
 * prototype, so it is neither an own field pino's error serializer copies into log lines nor one
 * JSON.stringify prints, and a subclass inherits its parent's entry until it declares its own
 * (test/unit/cli-error-catalogue.test.ts requires every class to declare one).
 */

/**
 * Exit codes: scripts can tell a bad request from a failed operation from a missing prerequisite. `lockLost`:
 * the command lost the stack's lock in the store to another holder mid-run and stopped its engine run
 * (src/cli/lock-loss.ts); unlike `unavailable`, running it again at once would run beside the new holder.
 * `unavailable` is sysexits' EX_TEMPFAIL: the backend or the store is down for now, and the same command
 * can be retried as it is.
 */
export const EXIT = {
    ok: 0,
    failed: 1,
    invalid: 2,
    prerequisite: 3,
    lockLost: 4,
    unavailable: 75,
    interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** One class's entry: the exit code it ends a command with, and its `--json` `error.type`. */
export interface CatalogueEntry {
    readonly exitCode: ExitCode;
    /**
     * The class's `name` as every error has printed it so far: a class that never set its own name prints
     * "Error", and keeps doing so (scripts may match it).
     */
    readonly type: string;
}

/** An error that declares its entry (every egress error class does). */
export interface Catalogued {
    readonly catalogue: CatalogueEntry;
}

/** The entry `e` declares, if it is an egress error. */
export function catalogueOf(e: unknown): CatalogueEntry | undefined {
    const entry = (e as Partial<Catalogued> | null | undefined)?.catalogue;
    return typeof entry?.exitCode === "number" && typeof entry.type === "string" ? entry : undefined;
}
