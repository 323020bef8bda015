import "pino-http"; // brings the `req.log` typing
import type { ErrorRequestHandler, RequestHandler } from "express";
import { ConfigError } from "../config";

/** An error with an HTTP status and a machine-readable code; the message is safe to show to the client. */
export class HttpError extends Error {
    constructor(readonly status: number, readonly code: string, message: string, readonly details?: unknown, readonly headers?: Record<string, string>) {
        super(message);
    }
}

export const notFound: RequestHandler = (req, _res, next) => next(new HttpError(404, "not_found", `no route for ${req.method} ${req.path}`));

/**
 * The one error handler, mounted last. Client mistakes get a 4xx JSON body saying what is wrong;
 * anything unexpected is logged in full and answered with a generic 500 (no internals leak).
 */
export const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
    let e: HttpError;
    if (err instanceof HttpError) e = err;
    else if (err instanceof ConfigError) e = new HttpError(400, "invalid_request", err.message, err.problems);
    else if (err?.type === "entity.parse.failed") e = new HttpError(400, "malformed_json", `request body is not valid JSON: ${err.message}`);
    else if (err?.type === "entity.too.large") e = new HttpError(413, "body_too_large", `request body exceeds ${err.limit} bytes`);
    else if (err?.type === "encoding.unsupported" || err?.type === "charset.unsupported") e = new HttpError(415, "unsupported_encoding", err.message);
    else if (typeof err?.status === "number" && err.status >= 400 && err.status < 500) e = new HttpError(err.status, "bad_request", err.message);
    else {
        req.log?.error({ err }, "unhandled error");
        e = new HttpError(500, "internal", "internal error; see the service log");
    }
    for (const [k, v] of Object.entries(e.headers ?? {})) res.setHeader(k, v);
    res.status(e.status).json({ error: { code: e.code, message: e.message, ...(e.details !== undefined ? { details: e.details } : {}) } });
};
