/**
 * Byte classes of RFC 9110/9112, as lookup tables: the parsers test one byte per table read in their
 * loops instead of chains of comparisons.
 */

function table(member: (c: number) => boolean): Uint8Array {
    const t = new Uint8Array(256);
    for (let c = 0; c < 256; c++) t[c] = member(c) ? 1 : 0;
    return t;
}

const isAlnum = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);

/** tchar (RFC 9110 §5.6.2): field names, methods, chunk-extension names and token values. */
export const TCHAR = table((c) => isAlnum(c) || "!#$%&'*+-.^_`|~".includes(String.fromCharCode(c)));

/** A request-target's bytes: visible ASCII. Anything else (space, HTAB, obs-text) is refused. */
export const TARGET = table((c) => c >= 0x21 && c <= 0x7e);

/** qdtext (RFC 9110 §5.6.4): inside a quoted chunk-extension value, besides `\` pairs. */
export const QDTEXT = table(
    (c) => c === 0x09 || c === 0x20 || c === 0x21 || (c >= 0x23 && c <= 0x7e && c !== 0x5c) || c >= 0x80,
);

/** The byte after `\` in a quoted-pair: HTAB, SP, VCHAR, obs-text. */
export const QPAIR = table((c) => c === 0x09 || (c >= 0x20 && c !== 0x7f));

/**
 * Bytes no head may hold anywhere (request line, status line, names, values): controls but HTAB, and
 * DEL. CR and LF are the line structure and are checked apart. llhttp refuses them in every place too,
 * save a status line's reason phrase (where the table says the layer is stricter).
 */
export const FORBIDDEN = table((c) => (c < 0x20 && c !== 0x09 && c !== 0x0d && c !== 0x0a) || c === 0x7f);

/** A hex digit's value, or -1. */
export const HEX = (() => {
    const t = new Int8Array(256).fill(-1);
    for (let c = 0; c < 10; c++) t[0x30 + c] = c;
    for (let c = 0; c < 6; c++) t[0x41 + c] = t[0x61 + c] = 10 + c;
    return t;
})();

export const CR = 0x0d;
export const LF = 0x0a;
export const SP = 0x20;
export const HTAB = 0x09;
