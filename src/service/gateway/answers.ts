import * as http from "node:http";
import type { Socket } from "node:net";
import { type ErrorCode, gatewayStatusOf } from "../http/catalogue";

/** The gateway's own answers (its refusals, as JSON with `X-Egress-Error`) and the request checks before them. */

/** `host:port` with a port in 1..65535: anything else is refused 400 before proxy-chain sees it. */
export const CONNECT_TARGET = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/;

export function isAbsoluteHttp(url: string | undefined): boolean {
    if (!url || !url.startsWith("http://")) return false;
    try {
        return new URL(url).hostname !== "";
    } catch {
        return false;
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
    bad_request: "http_request_error",
    bad_username: "http_request_error",
    unknown_pool: "http_request_error",
    unknown_zone: "http_request_error",
};

/** The `Proxy-Status` field (RFC 9209) of a refusal: proxy name `egress`, the error type, our code as details. */
export function proxyStatus(code: ErrorCode): string {
    return `egress; error=${PROXY_STATUS_TYPES[code] ?? "proxy_internal_response"}; details="${code}"`;
}

/** The pool label of an unavailable answer: the username's pool part (already validated by admission), else any pool. */
export function poolLabel(username: string): string {
    return username.split("_")[0] || "*";
}

export function answer(res: http.ServerResponse, code: ErrorCode, message: string): void {
    const status = gatewayStatusOf(code);
    const text = body(code, message);
    res.writeHead(status, {
        "Content-Type": "application/json; charset=utf-8",
        "Content-Length": Buffer.byteLength(text),
        "X-Egress-Error": code,
        "Proxy-Status": proxyStatus(code),
        Connection: "close",
    });
    res.end(text);
}

export function rawAnswer(socket: Socket, code: ErrorCode, message: string): void {
    const status = gatewayStatusOf(code);
    const text = body(code, message);
    socket.end(
        `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nX-Egress-Error: ${code}\r\nProxy-Status: ${proxyStatus(code)}\r\nConnection: close\r\n\r\n${text}`,
    );
}
