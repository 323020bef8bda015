import type { IncomingMessage, ServerResponse } from "node:http";
import pinoHttp, { HttpLogger } from "pino-http";
import type { Logger } from "pino";
import { HttpError } from "./errors";
import { LOG_SERIALIZERS } from "../../log/logger";
import { isSecretName, REDACTED, redactUrl } from "../../log/redact";

export type RequestLogLevel = "debug" | "info" | "error";

/**
 * Deliberate answers that mean "try again later" and can come by the thousand (a crawler fleet that
 * outgrew its pool, every client during a shutdown): logged at debug. They are counted in
 * egress_leases_total{result="unavailable"} and visible at /readyz.
 */
const QUIET_CODES = new Set(["none_available", "not_ready"]);

/**
 * The level of a request's log line, from what was answered:
 * - `err` is what answerFor (errors.ts) left on `res.err`: an HttpError for every deliberate answer
 *   (all 4xx, the 503s), or the unexpected error behind a generic 500. Only the latter, and any other
 *   5xx, is a server fault and logged at error (with its stack); a deliberate answer never is.
 * - Lease and release successes at debug: a busy crawler fleet sends thousands a second and a JSON
 *   line each would cost more than the lease; egress_leases_total and egress_lease_releases_total
 *   count them. Other successes and client mistakes at info.
 */
export function requestLogLevel(lease: boolean, status: number, err: unknown): RequestLogLevel {
    if (err instanceof HttpError) return QUIET_CODES.has(err.code) ? "debug" : "info";
    if (err || status >= 500) return "error";
    return status < 400 && lease ? "debug" : "info";
}

/** Routes whose successes are not logged at all: probes and scrapes, several a second. */
const UNLOGGED = new Set(["/healthz", "/metrics", "/v1/echo"]);

/** Header values by name, secret ones (authorization, cookie, x-api-key...) replaced. */
function redactHeaders(headers: Record<string, unknown>): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(headers)) out[k] = isSecretName(k) ? REDACTED : headers[k];
    return out;
}

/**
 * The request as logged: the URL with credential-carrying query values replaced (they are rejected
 * with 400 token_in_url, but the line saying so must not carry them), secret headers replaced. No
 * parsed `query` or `params`: the URL holds both.
 */
function serializeRequest(req: IncomingMessage & { id?: unknown; originalUrl?: string }) {
    return {
        id: req.id,
        method: req.method,
        url: redactUrl(req.originalUrl ?? req.url ?? ""),
        headers: redactHeaders(req.headers),
        remoteAddress: req.socket?.remoteAddress,
        remotePort: req.socket?.remotePort,
    };
}

function serializeResponse(res: ServerResponse) {
    return { statusCode: res.statusCode, headers: redactHeaders(res.getHeaders()) };
}

/**
 * pino-http for the service: the level above, and for deliberate answers the error code instead of
 * an `err` with a stack (the message is not logged: it may quote the request body, e.g. a JSON parse
 * error's excerpt). Its own serializers, not pino's wrapped ones: they read the raw objects once.
 */
export function requestLogger(log: Logger, isLease: (req: IncomingMessage) => boolean): HttpLogger {
    return pinoHttp({
        logger: log,
        customLogLevel: (req, res, err) =>
            requestLogLevel(isLease(req), res.statusCode, err ?? (res as { err?: unknown }).err),
        customErrorObject: (_req, _res, err, obj) =>
            err instanceof HttpError ? { res: obj.res, responseTime: obj.responseTime, error: err.code } : obj,
        customErrorMessage: (_req, _res, err) => (err instanceof HttpError ? "request completed" : "request errored"),
        autoLogging: { ignore: (req) => UNLOGGED.has(req.url ?? "") },
        wrapSerializers: false,
        serializers: { req: serializeRequest, res: serializeResponse, err: LOG_SERIALIZERS.err },
    });
}

export type RequestLogging = (req: IncomingMessage, res: ServerResponse) => void;
