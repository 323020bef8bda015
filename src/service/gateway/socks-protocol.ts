import { CONNECT_TARGET } from "./answers";

/**
 * SOCKS5's messages (RFC 1928, and RFC 1929's username/password sub-negotiation), read from the bytes a
 * client sent so far. Each reader answers `undefined` while the message is incomplete, else what it
 * held and how many bytes it used, or why it cannot be served. Pure: socks.ts drives them.
 */

/** RFC 1928 §6 reply codes. */
export const REPLY = {
    succeeded: 0x00,
    generalFailure: 0x01,
    notAllowed: 0x02,
    networkUnreachable: 0x03,
    hostUnreachable: 0x04,
    connectionRefused: 0x05,
    ttlExpired: 0x06,
    commandNotSupported: 0x07,
    addressTypeNotSupported: 0x08,
} as const;
export type ReplyCode = (typeof REPLY)[keyof typeof REPLY];

/** RFC 1928 §3 method: username/password (RFC 1929), the one offered to every client: the gateway needs its token. */
export const METHOD_USERPASS = 0x02;
/** RFC 1928 §3 method: no authentication, accepted only from an allowed source (`--gateway-allow`). */
export const METHOD_NONE = 0x00;
export const NO_ACCEPTABLE_METHOD = 0xff;

/** The most a handshake (greeting, authentication, request: at most 3 × ~515 bytes) may hold before it is cut. */
export const MAX_HANDSHAKE = 2048;

export type Read<T> = undefined | ({ ok: true; used: number } & T) | { ok: false; why: string; reply?: ReplyCode };

/** The greeting: VER 5, NMETHODS, METHODS. */
export function readGreeting(b: Buffer): Read<{ methods: number[] }> {
    if (b.length < 1) return undefined;
    if (b[0] !== 5) return { ok: false, why: `not SOCKS version 5 (first byte ${b[0]})` };
    if (b.length < 2) return undefined;
    const n = b[1];
    if (n === 0) return { ok: false, why: "a greeting with no methods" };
    if (b.length < 2 + n) return undefined;
    return { ok: true, used: 2 + n, methods: [...b.subarray(2, 2 + n)] };
}

/** RFC 1929: VER 1, ULEN, UNAME, PLEN, PASSWD. An empty username is read (the gateway's "any pool"). */
export function readAuth(b: Buffer): Read<{ username: string; password: string }> {
    if (b.length < 1) return undefined;
    if (b[0] !== 1) return { ok: false, why: `not username/password version 1 (first byte ${b[0]})` };
    if (b.length < 2) return undefined;
    const ulen = b[1];
    if (b.length < 3 + ulen) return undefined;
    const plen = b[2 + ulen];
    if (b.length < 3 + ulen + plen) return undefined;
    return {
        ok: true,
        used: 3 + ulen + plen,
        username: b.subarray(2, 2 + ulen).toString("utf8"),
        password: b.subarray(3 + ulen, 3 + ulen + plen).toString("utf8"),
    };
}

/**
 * The request: VER 5, CMD, RSV, ATYP, DST.ADDR, DST.PORT. Only CONNECT (1) is served; the host comes
 * back as a CONNECT line names it (an IPv6 address in brackets).
 */
export function readRequest(b: Buffer): Read<{ host: string; port: number }> {
    if (b.length < 4) return undefined;
    if (b[0] !== 5) return { ok: false, why: `a request that is not SOCKS version 5 (${b[0]})`, reply: 1 };
    if (b[1] !== 1)
        return { ok: false, why: `command ${b[1]} (only CONNECT, 1, is served)`, reply: REPLY.commandNotSupported };
    const atyp = b[3];
    let host: string;
    let at: number;
    if (atyp === 1) {
        if (b.length < 4 + 4 + 2) return undefined;
        host = [...b.subarray(4, 8)].join(".");
        at = 8;
    } else if (atyp === 4) {
        if (b.length < 4 + 16 + 2) return undefined;
        const groups: string[] = [];
        for (let i = 0; i < 8; i++) groups.push(b.readUInt16BE(4 + 2 * i).toString(16));
        host = new URL(`http://[${groups.join(":")}]/`).hostname; // compressed, in brackets
        at = 20;
    } else if (atyp === 3) {
        if (b.length < 5) return undefined;
        const len = b[4];
        if (b.length < 5 + len + 2) return undefined;
        host = b.subarray(5, 5 + len).toString("latin1");
        at = 5 + len;
    } else return { ok: false, why: `address type ${atyp}`, reply: REPLY.addressTypeNotSupported };
    const port = b.readUInt16BE(at);
    if (port === 0) return { ok: false, why: "port 0", reply: REPLY.notAllowed };
    if (!CONNECT_TARGET.test(`${host}:${port}`))
        return { ok: false, why: "a host name that is not one", reply: REPLY.hostUnreachable };
    return { ok: true, used: at + 2, host, port };
}

/** A reply (RFC 1928 §6) with BND.ADDR 0.0.0.0:0: the member's own address is none of the client's business. */
export function reply(code: ReplyCode): Buffer {
    return Buffer.from([5, code, 0, 1, 0, 0, 0, 0, 0, 0]);
}
