import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import type { AppDeps } from "./deps";
import { answerFor, errorBody, HttpError } from "../http/errors";
import { acquireLease, releaseLease } from "./lease-api";
import { requestLogLevel, RequestLogging } from "../http/request-log";

/** Largest accepted request body, in bytes (app.ts gives the same number to express.json). */
export const BODY_LIMIT_BYTES = 16 * 1024;

const LEASES = "/v1/leases";
/** Lease ids are UUIDs; anything needing percent-decoding goes the Express way, which decodes it. */
const RELEASE = /^\/v1\/leases\/([A-Za-z0-9_.~-]+)\/release$/;

/** True for the two lease routes; their successes are logged at debug (they come thousands a second). */
export function isLeaseRequest(req: IncomingMessage): boolean {
    const url = (req as { originalUrl?: string }).originalUrl ?? req.url ?? "";
    return req.method === "POST" && (url === LEASES || RELEASE.test(url));
}

/**
 * Only bodies express.json would read as plain UTF-8 JSON: no transfer or content coding, a length
 * within the limit, and no content type or application/json with at most charset=utf-8. Everything
 * else (gzip, chunked, other charsets, oversized) goes to Express so its 4xx answers stay the only ones.
 */
function plainBody(h: IncomingHttpHeaders): boolean {
    if (h["transfer-encoding"] !== undefined) return false;
    const coding = h["content-encoding"];
    if (coding !== undefined && coding.toLowerCase() !== "identity") return false;
    const length = h["content-length"];
    if (length !== undefined && !(Number(length) <= BODY_LIMIT_BYTES)) return false;
    const type = h["content-type"];
    return type === undefined || /^application\/json\s*(;\s*charset="?utf-8"?\s*)?$/i.test(type);
}

/** The bytes Express's res.status(s).json(body) would send, without Express. */
export function writeJson(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void {
    const text = JSON.stringify(body);
    // writeHead with a flat list: one header pass instead of a validated setHeader call per header.
    const list = ["Content-Type", "application/json; charset=utf-8", "Content-Length", String(Buffer.byteLength(text))];
    if (headers) for (const k of Object.keys(headers)) list.push(k, headers[k]);
    res.writeHead(status, list);
    res.end(text);
}

/** express.json({strict: true}) semantics: empty → {}, a leading BOM is dropped, only objects and arrays. */
function parseJson(text: string): unknown {
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    if (text.length === 0) return {};
    try {
        const first = text.trimStart()[0];
        if (first !== "{" && first !== "[") strictViolation(text, text.indexOf(first));
        return JSON.parse(text);
    } catch (e) {
        throw new HttpError("malformed_json", `request body is not valid JSON: ${(e as Error).message}`);
    }
}

/** Throws the SyntaxError body-parser gives a non-object body: JSON.parse's own words, about `text`. */
function strictViolation(text: string, index: number): never {
    const partial = index < 0 ? "" : text.slice(0, index) + "#".repeat(text.length - index);
    try {
        JSON.parse(partial);
    } catch (e) {
        throw new SyntaxError((e as Error).message.replace(/#+/g, (p) => text.slice(index, index + p.length)));
    }
    throw new SyntaxError("strict violation");
}

/**
 * POST /v1/leases and POST /v1/leases/:id/release without Express. Express 5's per-request set-up
 * (prototype swaps on req/res, router dispatch, body-parser's async resource) and an eager request
 * logger cost several times the lease work: on the 2-core bench host the service answered ~2,200
 * lease+release pairs/s through Express and ~14,000 through this path (docs/bench.md).
 * Same steps in the same order as the Express stack: request logger (req.log), body read and JSON
 * parse, bearer token check, then lease-api.ts; errors render through errors.ts. Returns false, having
 * touched nothing, for any request it does not take, and Express handles it as before.
 */
export function leaseFastPath(
    deps: AppDeps,
    logging: RequestLogging,
): (req: IncomingMessage, res: ServerResponse) => boolean {
    const auth = deps.auth("lease") as unknown as (
        req: IncomingMessage,
        res: ServerResponse,
        next: (err?: unknown) => void,
    ) => void;
    return (req, res) => {
        if (req.method !== "POST") return false;
        const url = req.url ?? "";
        let id: string | undefined;
        if (url !== LEASES) {
            const m = RELEASE.exec(url);
            if (!m) return false;
            id = m[1];
        }
        if (!plainBody(req.headers)) return false;
        // pino-http serializes and redacts the request for req.log up front, a tenth of this path's CPU,
        // for a success line that is logged at debug only. So unless debug is on, it is attached only
        // when a request fails with an answer logged at an enabled level (not a 503 none_available at
        // info), just before answering: such failures are logged as before, except that their
        // responseTime counts from the moment the failure was known. Nothing else here reads req.log.
        const eager = deps.log.isLevelEnabled("debug");
        if (eager) logging(req, res);
        const fail = (err: unknown) => {
            if (res.headersSent) return void res.destroy(); // failed mid-answer: nothing sane left to send
            const e = answerFor(res, err);
            if (!eager && deps.log.isLevelEnabled(requestLogLevel(true, e.status, (res as { err?: unknown }).err)))
                logging(req, res);
            writeJson(res, e.status, errorBody(e), e.headers);
        };
        const chunks: Buffer[] = [];
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () => {
            try {
                const body = parseJson(
                    chunks.length === 1 ? chunks[0].toString("utf8") : Buffer.concat(chunks).toString("utf8"),
                );
                auth(req, res, (err) => {
                    if (err) return fail(err);
                    try {
                        const out = id === undefined ? acquireLease(deps, body) : releaseLease(deps, id, body);
                        // The memory store answers in this turn; a Redis store later (or with a 503 store_unavailable).
                        if (out instanceof Promise) out.then((o) => writeJson(res, o.status, o.body), fail);
                        else writeJson(res, out.status, out.body);
                    } catch (e) {
                        fail(e);
                    }
                });
            } catch (e) {
                fail(e);
            }
        });
        return true;
    };
}
