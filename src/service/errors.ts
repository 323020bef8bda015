import "pino-http"; // brings the `req.log` typing
import type { ServerResponse } from "node:http";
import type { ErrorRequestHandler, RequestHandler } from "express";
import { ConfigError } from "../config";

/** An error with an HTTP status and a machine-readable code; the message is safe to show to the client. */
export class HttpError extends Error {
    /** For the generic 500 only: what was actually thrown, which the request log line carries with its stack. */
    unexpected?: unknown;

    constructor(
        readonly status: number,
        readonly code: string,
        message: string,
        readonly details?: unknown,
        readonly headers?: Record<string, string>,
    ) {
        super(message);
    }
}

export const notFound: RequestHandler = (req, _res, next) =>
    next(new HttpError(404, "not_found", `no route for ${req.method} ${req.path}`));

/**
 * Maps anything thrown or passed to `next` to the HttpError the client sees. Client mistakes keep
 * their 4xx and say what is wrong; anything unexpected becomes a generic 500 (so no internals leak)
 * that keeps the original in `unexpected` for the log.
 */
export function toHttpError(err: any): HttpError {
    if (err instanceof HttpError) return err;
    if (err instanceof ConfigError) return new HttpError(400, "invalid_request", err.message, err.problems);
    if (err?.type === "entity.parse.failed")
        return new HttpError(400, "malformed_json", `request body is not valid JSON: ${err.message}`);
    if (err?.type === "entity.too.large")
        return new HttpError(413, "body_too_large", `request body exceeds ${err.limit} bytes`);
    if (err?.type === "encoding.unsupported" || err?.type === "charset.unsupported")
        return new HttpError(415, "unsupported_encoding", err.message);
    if (typeof err?.status === "number" && err.status >= 400 && err.status < 500)
        return new HttpError(err.status, "bad_request", err.message);
    const e = new HttpError(500, "internal", "internal error; see the service log");
    e.unexpected = err;
    return e;
}

/**
 * The HttpError to answer `err` with, recorded as `res.err` for the request logger (request-log.ts):
 * a deliberate answer (any HttpError: 4xx, 503 none_available/not_ready) is logged as its code without
 * a stack, the original of a generic 500 with its stack at error. Without `res.err`, pino-http would
 * make up an Error, stack and all, for every 5xx, the deliberate 503s included.
 * Shared by errorHandler and the lease fast path (fast-path.ts).
 */
export function answerFor(res: ServerResponse, err: unknown): HttpError {
    const e = toHttpError(err);
    (res as { err?: unknown }).err = e.unexpected ?? e;
    return e;
}

/** The JSON body of every error response. */
export function errorBody(e: HttpError): { error: { code: string; message: string; details?: unknown } } {
    return { error: { code: e.code, message: e.message, ...(e.details !== undefined ? { details: e.details } : {}) } };
}

/** The one Express error handler, mounted last. */
export const errorHandler: ErrorRequestHandler = (err, _req, res, _next) => {
    const e = answerFor(res, err);
    for (const [k, v] of Object.entries(e.headers ?? {})) res.setHeader(k, v);
    res.status(e.status).json(errorBody(e));
};
