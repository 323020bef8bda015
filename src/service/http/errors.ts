import "pino-http"; // brings the `req.log` typing
import type { ServerResponse } from "node:http";
import type { ErrorRequestHandler, RequestHandler } from "express";
import { ConfigError } from "../../config";
import { type ErrorCode, statusOf } from "./catalogue";
import { type CatalogueEntry, EXIT } from "../../model/error-catalogue";

/**
 * An error with a machine-readable code from the catalogue (catalogue.ts, which gives its status) and a
 * message that is safe to show to the client.
 */
export class HttpError extends Error {
    /** Its `--json` error.type is \"Error\": the class never named itself (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "Error" };
    }
    /** For the generic 500 only: what was actually thrown, which the request log line carries with its stack. */
    unexpected?: unknown;
    readonly status: number;

    constructor(
        readonly code: ErrorCode,
        message: string,
        readonly details?: unknown,
        readonly headers?: Record<string, string>,
        /** Only for a client error whose status came with it (body-parser's 4xx): else the catalogue's. */
        status?: number,
    ) {
        super(message);
        this.status = status ?? statusOf(code);
    }
}

export const notFound: RequestHandler = (req, _res, next) =>
    next(new HttpError("not_found", `no route for ${req.method} ${req.path}`));

/**
 * Maps anything thrown or passed to `next` to the HttpError the client sees. Client mistakes keep
 * their 4xx and say what is wrong; anything unexpected becomes a generic 500 (so no internals leak)
 * that keeps the original in `unexpected` for the log.
 */
export function toHttpError(err: any): HttpError {
    if (err instanceof HttpError) return err;
    if (err instanceof ConfigError) return new HttpError("invalid_request", err.message, err.problems);
    if (err?.type === "entity.parse.failed")
        return new HttpError("malformed_json", `request body is not valid JSON: ${err.message}`);
    if (err?.type === "entity.too.large")
        return new HttpError("body_too_large", `request body exceeds ${err.limit} bytes`);
    if (err?.type === "encoding.unsupported" || err?.type === "charset.unsupported")
        return new HttpError("unsupported_encoding", err.message);
    if (typeof err?.status === "number" && err.status >= 400 && err.status < 500)
        return new HttpError("bad_request", err.message, undefined, undefined, err.status);
    const e = new HttpError("internal", "internal error; see the service log");
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
