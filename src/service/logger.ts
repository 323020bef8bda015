import pino from "pino";

/**
 * Paths pino blanks wherever they appear in a log line: bearer tokens, cloud-init bodies, SSH keys,
 * anything called secret/token/password. Kept in one place so every logger in the process shares it.
 */
export const REDACT_PATHS = [
    "req.headers.authorization",
    "req.headers.cookie",
    "*.token",
    "*.password",
    "*.privateKey",
    "*.cloudInit",
    "*.userData",
    "*.secret",
    "*.*.privateKey",
];

/** The process's root logger: JSON lines on stdout (or to `destination`), secrets redacted. */
export function createLogger(opts: { level?: string; destination?: pino.DestinationStream } = {}): pino.Logger {
    return pino({ level: opts.level ?? process.env.EGRESS_LOG_LEVEL ?? "info", redact: { paths: REDACT_PATHS, censor: "[redacted]" }, base: { service: "egress" } }, opts.destination);
}
