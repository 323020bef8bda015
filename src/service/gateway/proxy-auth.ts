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
