import type { Socket } from "node:net";

/**
 * The client's `Proxy-Authorization`, read as the gateway always has (proxy-chain's reading, kept when
 * the gateway stopped using it): Basic only; `user:pass`, or the whole as the username when there is no
 * colon; no header is an empty username and password (admission then answers 407).
 */
export type ProxyCredentials = { ok: true; username: string; password: string } | { ok: false; message: string };

export function proxyCredentials(header: string | undefined): ProxyCredentials {
    const value = header?.trim();
    if (!value) return { ok: true, username: "", password: "" };
    const space = value.indexOf(" ");
    const type = space < 0 ? "" : value.slice(0, space);
    if (type.toLowerCase() !== "basic")
        return { ok: false, message: 'the "Proxy-Authorization" header must have the "Basic" type' };
    const pair = Buffer.from(value.slice(space + 1), "base64").toString();
    const colon = pair.indexOf(":");
    if (colon < 0) return { ok: true, username: pair, password: "" };
    return { ok: true, username: pair.slice(0, colon), password: pair.slice(colon + 1) };
}

const LAST = Symbol("egress.gateway.lastCredentials");
type Remembering = Socket & { [LAST]?: { header: string | undefined; credentials: ProxyCredentials } };

/**
 * The credentials of a request on keep-alive connection `socket`: when the header is the one the
 * connection's previous request sent, the same object as then, so admission (admission.ts) can answer
 * from what it checked for that request instead of hashing the token again. The header is compared
 * with the one this same connection sent before, never with a stored secret: nothing is learnt from
 * the comparison's time that the client did not send itself.
 */
export function connectionCredentials(socket: Socket, header: string | undefined): ProxyCredentials {
    const s = socket as Remembering;
    const last = s[LAST];
    if (last !== undefined && last.header === header) return last.credentials;
    const credentials = proxyCredentials(header);
    s[LAST] = { header, credentials };
    return credentials;
}
