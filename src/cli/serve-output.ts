/**
 * `egress serve` writes nothing but JSON lines, on stdout and stderr alike, so `jq` and log shippers read
 * every line (docs/operations.md, "Logs"). Events go to the root logger on stdout; what ends the process
 * (a bad flag, a config error, a failed start, a crash) goes to stderr, in the same format, so the
 * "errors on stderr" habit of the other commands still holds. `--help` and `--version` stay plain text:
 * a person asked for them.
 */
import type { Command } from "commander";
import pino from "pino";
import { createLogger } from "../log/logger";
import { exitCodeOf } from "./context";

/** The two loggers of a serve process. stderr's is synchronous: it is written just before the process exits. */
export interface ServeLoggers {
    log: pino.Logger;
    errors: pino.Logger;
}

export function serveLoggers(): ServeLoggers {
    return { log: createLogger(), errors: createLogger({ destination: pino.destination({ fd: 2, sync: true }) }) };
}

/**
 * Why serve stops with `e`, as one fatal line on stderr; returns the exit code (as other commands exit).
 * A ConfigError's problems (path, rule, a value preview that never shows secrets) come along as
 * `err.problems`: pino's error serializer keeps an error's own fields.
 */
export function reportServeError(errors: pino.Logger, e: unknown): number {
    const exitCode = exitCodeOf(e);
    const message = e instanceof Error ? e.message : String(e);
    errors.fatal({ err: e instanceof Error ? e : new Error(message), exitCode }, message);
    return exitCode;
}

/**
 * Commander's own messages for this command (an unknown option, a missing value) as fatal JSON lines on
 * stderr instead of `error: ...` plus the help text; exit code 2 is the root's exitOverride.
 */
export function jsonCommanderErrors(cmd: Command, errors: () => pino.Logger): Command {
    return cmd.showHelpAfterError(false).configureOutput({
        writeErr: (text) => {
            const message = text.trim().replace(/^error: /, "");
            if (message) errors().fatal({ exitCode: 2, hint: "`egress serve --help` lists the options" }, message);
        },
    });
}

/**
 * What Node itself would print as text: process warnings (deprecations, experimental features, a
 * listener leak) become warn lines, and an exception nobody handled becomes one fatal line on stderr
 * before exit 1, never a bare stack trace. Unhandled rejections arrive here too (`origin`): Node raises
 * them as uncaught exceptions, and so does the engine's handler for the ones it does not drop
 * (src/engine/program-disconnect.ts), so no second rejection handler may decide otherwise.
 */
export function jsonProcessOutput({ log, errors }: ServeLoggers): void {
    // Node's default printer is an ordinary 'warning' listener: removing it is the documented way to replace it.
    process.removeAllListeners("warning");
    process.on("warning", (w) => log.warn({ warning: w.name, err: w }, `node: ${w.message}`));
    process.on("uncaughtException", (e, origin) => {
        const message = e instanceof Error ? e.message : String(e);
        errors.fatal(
            { err: e instanceof Error ? e : new Error(message), origin, exitCode: 1 },
            `${origin === "unhandledRejection" ? "unhandled rejection" : "uncaught exception"}: ${message}`,
        );
        process.exit(1);
    });
}
