import pino from "pino";
import { maskUrlPasswords, redactDeep, redactField } from "./redact";

/**
 * Keys whose values reach the line through a serializer, which redacts its own output: the raw
 * objects under them (an IncomingMessage, a ServerResponse) are not walked.
 */
const SERIALIZED = new Set(["req", "res", "err"]);

/** A log object or child bindings with secrets redacted at any depth (redact.ts), serialized keys aside. */
function redactFields(obj: Record<string, unknown>): Record<string, unknown> {
    let out: Record<string, unknown> | undefined;
    for (const k in obj) {
        if (SERIALIZED.has(k)) continue;
        const x = obj[k];
        const w = redactField(k, x);
        if (w !== x) (out ??= { ...obj })[k] = w;
    }
    return out ?? obj;
}

/**
 * Serializers for the keys redactFields leaves alone; request-log.ts gives pino-http the same `err`.
 * Errors go through pino's serializer (type, message, stack, causes, own fields), then redaction.
 */
export const LOG_SERIALIZERS = {
    err: (e: unknown) => redactDeep(pino.stdSerializers.err(e as Error)),
    req: redactDeep,
    res: redactDeep,
};

/**
 * The process's root logger: JSON lines on stdout (or to `destination`), `time` in RFC 3339 (UTC,
 * milliseconds). Secrets are redacted by field name at any depth (src/log/redact.ts: token, password, privateKey, passphrase, secret,
 * cloudInit, userData, authorization, cookie... and names ending in them), in log objects, child
 * bindings and serialized errors; pino's own `redact` only matches the depths it is given.
 */
export function createLogger(
    opts: { level?: string; destination?: pino.DestinationStream; base?: Record<string, unknown> } = {},
): pino.Logger {
    const root = pino(
        {
            level: opts.level ?? process.env.EGRESS_LOG_LEVEL ?? "info",
            formatters: { log: redactFields },
            // The message itself: a URL's password in it is masked too (fields are walked by redactFields).
            hooks: {
                logMethod(args, method) {
                    for (let i = 0; i < args.length; i++)
                        if (typeof args[i] === "string") args[i] = maskUrlPasswords(args[i] as string);
                    return method.apply(this, args as Parameters<typeof method>);
                },
            },
            serializers: LOG_SERIALIZERS,
            timestamp: pino.stdTimeFunctions.isoTime,
            base: opts.base ?? { service: "egress" },
        },
        opts.destination,
    );
    // pino gives child loggers no bindings formatter (it resets it on every child), so bindings are
    // redacted on the way in. Children inherit from their parent, so this one override covers them all.
    const child = root.child;
    root.child = function (this: pino.Logger, bindings, options) {
        return child.call(this, redactFields(bindings), options);
    } as typeof root.child;
    return root;
}
