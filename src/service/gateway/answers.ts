import * as http from "node:http";
import type { Socket } from "node:net";
import { type ErrorCode, gatewayStatusOf } from "../http/catalogue";

/** The gateway's own answers (its refusals, as JSON with `X-Egress-Error`) and the request checks before them. */

/** `host:port` with a port in 1..65535: anything else is refused 400 before a lease is taken. */
export const CONNECT_TARGET = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/;

/** The URL of an absolute-form `http://` request target with a host, or undefined (parsed once: it is per request). */
export function absoluteHttp(url: string | undefined): URL | undefined {
    if (!url || !url.startsWith("http://")) return undefined;
    try {
        const u = new URL(url);
        return u.hostname !== "" ? u : undefined;
    } catch {
        return undefined;
    }
}

export const cut = (s: string) => (s.length > 100 ? `${s.slice(0, 100)}…` : s);
export const body = (code: string, message: string) => JSON.stringify({ error: { code, message } });

/**
 * RFC 9209 error types (its registry) for the gateway's own refusals. Client mistakes are request errors,
 * missing or refused credentials a denied request; a busy, starting or store-less gateway answers for
 * itself (`proxy_internal_response`): no member was tried, so there is no `next-hop`.
 */
const PROXY_STATUS_TYPES: Partial<Record<ErrorCode, string>> = {
    unauthenticated: "http_request_denied",
    forbidden: "http_request_denied",
    forbidden_target: "destination_ip_prohibited",
    over_limit: "connection_limit_reached",
    target_busy: "connection_limit_reached",
    bad_request: "http_request_error",
    headers_too_large: "http_request_error",
    request_timeout: "http_request_error",
    bad_username: "http_request_error",
    unknown_pool: "http_request_error",
    unknown_zone: "http_request_error",
    unknown_label: "http_request_error",
    // The session's member is what the client asked for, and it is gone: RFC 9209 §2.3.3.
    session_gone: "destination_unavailable",
};

/** The `Proxy-Status` field (RFC 9209) of a refusal: proxy name `egress`, the error type, our code as details. */
export function proxyStatus(code: ErrorCode): string {
    return `egress; error=${PROXY_STATUS_TYPES[code] ?? "proxy_internal_response"}; details="${code}"`;
}

/** An RFC 8941 sf-string: printable ASCII only (anything else becomes `?`), `"` and `\` escaped. */
export function sfString(s: string): string {
    return `"${s.replace(/[^\x20-\x7e]/g, "?").replace(/[\\"]/g, "\\$&")}"`;
}

/**
 * How a leased member failed a request, as the gateway answers it: the catalogue code (its status),
 * the RFC 9209 error type and what happened, for `Proxy-Status` with the member as `next-hop`.
 */
export interface MemberFailure {
    code: "member_unreachable" | "member_timeout";
    /** An RFC 9209 error type: connection_refused, connection_timeout, connection_terminated, … */
    type: string;
    details: string;
}

/** The `Proxy-Status` of a member's failure: `egress; error=…; next-hop="<member id>"; details="…"`. */
export function memberProxyStatus(failure: MemberFailure, memberId: string): string {
    return `egress; error=${failure.type}; next-hop=${sfString(memberId)}; details=${sfString(failure.details)}`;
}

/** The failure a socket error stands for: refused, timed out, or broken off (reset, closed, unparsable). */
export function memberFailure(err: NodeJS.ErrnoException, what: string): MemberFailure {
    const details = `${what}: ${err.code ?? err.message}`;
    if (err.code === "ECONNREFUSED") return { code: "member_unreachable", type: "connection_refused", details };
    if (err.code === "ETIMEDOUT") return { code: "member_timeout", type: "connection_timeout", details };
    if (err.code?.startsWith("HPE_")) return { code: "member_unreachable", type: "http_protocol_error", details };
    return { code: "member_unreachable", type: "connection_terminated", details };
}

/** The answer to a member's failure: the catalogue's status, a JSON body, `X-Egress-Error` and `Proxy-Status`. */
export function memberFailureAnswer(
    failure: MemberFailure,
    memberId: string,
    attempts: number,
): { status: number; headers: Record<string, string>; text: string } {
    const text = body(failure.code, `member ${memberId} failed the request before answering (${failure.details})`);
    return {
        status: gatewayStatusOf(failure.code),
        headers: {
            "Content-Type": "application/json; charset=utf-8",
            "Content-Length": String(Buffer.byteLength(text)),
            "X-Egress-Error": failure.code,
            "X-Egress-Proxy": memberId,
            "Proxy-Status": memberProxyStatus(failure, memberId),
            [ATTEMPTS]: String(attempts),
            Connection: "close",
        },
        text,
    };
}

/** How many members the request went to (retries.ts): on every answer that came from or through one. */
export const ATTEMPTS = "X-Egress-Attempts";

/** The pool label of an unavailable answer: the username's pool part (already validated by admission), else any pool. */
export function poolLabel(username: string): string {
    return username.split("_")[0] || "*";
}

/** A refusal on a request the server parsed: JSON, `X-Egress-Error`, `Proxy-Status`, and the connection closes. */
export function answer(
    res: http.ServerResponse,
    code: ErrorCode,
    message: string,
    extra?: Record<string, string>,
): void {
    const status = gatewayStatusOf(code);
    const text = body(code, message);
    res.writeHead(status, {
        ...extra,
        "Content-Type": "application/json; charset=utf-8",
        "Content-Length": Buffer.byteLength(text),
        "X-Egress-Error": code,
        "Proxy-Status": proxyStatus(code),
        Connection: "close",
    });
    res.end(text);
}

/** The same on a socket the server no longer speaks HTTP on (CONNECT, a parse error). */
export function rawAnswer(socket: Socket, code: ErrorCode, message: string, extra?: Record<string, string>): void {
    const text = body(code, message);
    rawHead(socket, gatewayStatusOf(code), {
        ...extra,
        "Content-Type": "application/json; charset=utf-8",
        "Content-Length": String(Buffer.byteLength(text)),
        "X-Egress-Error": code,
        "Proxy-Status": proxyStatus(code),
        Connection: "close",
    });
    socket.end(text);
}

/**
 * What the gateway answers a request Node's parser gave up on (`clientError`): headers over Node's limit
 * are a 431 and a head that did not arrive in time (`headersTimeout`) a 408, both standard codes a
 * client can act on; anything else unreadable is a 400.
 */
export function clientErrorAnswer(err: NodeJS.ErrnoException): {
    code: "bad_request" | "headers_too_large" | "request_timeout";
    message: string;
} {
    if (err.code === "HPE_HEADER_OVERFLOW")
        return { code: "headers_too_large", message: `the request's headers are over ${http.maxHeaderSize} bytes` };
    if (err.code === "ERR_HTTP_REQUEST_TIMEOUT")
        return { code: "request_timeout", message: "the request's head did not arrive in time" };
    return { code: "bad_request", message: `not an HTTP request the gateway can read (${err.code ?? err.message})` };
}

/** Writes a status line and headers on a raw socket (`reason` defaults to the standard one). */
export function rawHead(socket: Socket, status: number, headers: Record<string, string>, reason?: string): void {
    let head = `HTTP/1.1 ${status} ${reason ?? http.STATUS_CODES[status] ?? "Unknown"}\r\n`;
    for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
    socket.write(`${head}\r\n`);
}
