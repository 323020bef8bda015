import { STATUS_CODES } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "pino";
import { errorBody, HttpError } from "../http/errors";
import { writeJson } from "./fast-path";

/** A parser error as Node hands it to `clientError`: `code` (HPE_*), and llhttp's `reason` in words. */
type ParserError = Error & { code?: string; reason?: string };

/** What each parser error is answered with; everything else is a 400 malformed_request. */
function answerForParserError(err: ParserError): HttpError {
    switch (err.code) {
        case "HPE_HEADER_OVERFLOW":
            return new HttpError("headers_too_large", "request headers are larger than the server accepts");
        case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
            return new HttpError("chunk_extensions_too_large", "chunk extensions are larger than the server accepts");
        case "ERR_HTTP_REQUEST_TIMEOUT":
            return new HttpError("request_timeout", "the request did not arrive in time");
        case "HPE_INVALID_METHOD":
            return new HttpError("invalid_method", "not an HTTP method this server knows");
        default:
            // llhttp's reason says what is wrong without quoting the request (e.g. "Transfer-Encoding can't be present with Content-Length").
            return new HttpError(
                "malformed_request",
                `malformed HTTP request: ${err.reason ?? err.code ?? "unparsable"}`,
            );
    }
}

/** The raw bytes of a JSON error answer that closes the connection. */
function rawAnswer(e: HttpError): string {
    const body = JSON.stringify(errorBody(e));
    return `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

/**
 * Requests Node rejects before the app sees them get the same JSON error body as everything else
 * instead of Node's empty 400/417: unparsable requests (`clientError`: bad method, Content-Length with
 * Transfer-Encoding, oversized headers, bad chunking...) and an `Expect` other than 100-continue
 * (`checkExpectation`). Logged at info with the parser's code only; the raw bytes may hold a token.
 */
export function answerProtocolErrors(server: Server, log: Logger): void {
    server.on("clientError", (err: ParserError, socket: Duplex) => {
        if (err.code === "ECONNRESET" || err.code === "EPIPE" || !socket.writable) return void socket.destroy();
        // A response to this connection's current request may have started already (an error in its
        // body after the app answered); writing another one would corrupt the stream. Node's own
        // handler makes the same check on the same internal field.
        const current = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
        if (current?.headersSent) return void socket.destroy();
        const e = answerForParserError(err);
        log.info({ status: e.status, error: e.code, parserCode: err.code }, "malformed HTTP request answered");
        socket.end(rawAnswer(e), () => socket.destroy());
    });
    server.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) => {
        const e = new HttpError(
            "expectation_failed",
            "unsupported Expect header: only `Expect: 100-continue` is supported",
            undefined,
            { Connection: "close" },
        );
        log.info({ method: req.method, status: e.status, error: e.code }, "request with unsupported Expect answered");
        writeJson(res, e.status, errorBody(e), e.headers);
    });
}
