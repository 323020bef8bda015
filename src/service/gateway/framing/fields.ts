import { HTAB, LF, SP, TCHAR } from "./chars";
import { refuse } from "./errors";

/** One header line as it arrived: its name and value (OWS trimmed), and where its bytes are in the head. */
export interface Field {
    readonly name: string;
    readonly value: string;
    /** The line's first byte in the head's `raw`. */
    readonly start: number;
    /** Just past the line's CRLF. */
    readonly end: number;
}

/** What the fields say about framing and the connection, once every line was checked. */
export interface FieldFacts {
    fields: Field[];
    /** The one valid Content-Length's value, if any. */
    contentLength?: number;
    /** A Transfer-Encoding line was there (its value, checked, is `chunked`). */
    chunked: boolean;
    hosts: number;
    /** A `close` token in Connection (or Proxy-Connection, which llhttp reads alike). */
    close: boolean;
    /** A `keep-alive` token there (what keeps an HTTP/1.0 connection open). */
    keepAlive: boolean;
}

/** Values no parser reads two ways: a JS number counts bytes exactly up to 2^53 - 1 (8 PiB). */
const MAX_LENGTH = Number.MAX_SAFE_INTEGER;

/**
 * The header lines of a complete head from `from` (just past the start line) to its final CRLF. The
 * scanner (head-scan.ts) already refused bare CR/LF, control bytes and obs-fold; this reads names and
 * the fields that decide where the message ends, and refuses every way they could be read twice.
 */
export function readFields(raw: Buffer, from: number): FieldFacts {
    const facts: FieldFacts = { fields: [], chunked: false, hosts: 0, close: false, keepAlive: false };
    let lengths = 0;
    let encodings = 0;
    const last = raw.length - 2;
    for (let start = from; start < last;) {
        const eol = raw.indexOf(LF, start);
        const end = eol + 1;
        let colon = start;
        while (colon < eol && TCHAR[raw[colon]]) colon++;
        if (colon === start || raw[colon] !== 0x3a)
            refuse("invalid_field_name", "a header name that is empty, not a token, or not followed by a colon");
        const name = raw.toString("latin1", start, colon);
        let vs = colon + 1;
        let ve = eol - 1;
        while (vs < ve && (raw[vs] === SP || raw[vs] === HTAB)) vs++;
        while (ve > vs && (raw[ve - 1] === SP || raw[ve - 1] === HTAB)) ve--;
        const value = raw.toString("latin1", vs, ve);
        facts.fields.push({ name, value, start, end });
        switch (framingName(name)) {
            case "content-length":
                lengths++;
                facts.contentLength = contentLength(raw, colon + 1, eol - 1, value);
                break;
            case "transfer-encoding":
                encodings++;
                facts.chunked = chunkedOnly(raw, colon + 1, eol - 1, value);
                break;
            case "host":
                facts.hosts++;
                break;
            case "connection":
            case "proxy-connection":
                connectionTokens(value, facts);
                break;
        }
        start = end;
    }
    if (lengths > 0 && encodings > 0)
        refuse("content_length_with_transfer_encoding", "Content-Length and Transfer-Encoding together");
    if (lengths > 1) refuse("duplicate_content_length", "more than one Content-Length line");
    if (encodings > 1) refuse("invalid_transfer_encoding", "more than one Transfer-Encoding line");
    return facts;
}

/** The lower-case name when it is one the framing reads, else undefined (most names: no lower-casing). */
function framingName(name: string): string | undefined {
    const n = name.length;
    if (n !== 4 && n !== 10 && n !== 14 && n !== 16 && n !== 17) return undefined;
    const lower = name.toLowerCase();
    return lower === "host" ||
        lower === "connection" ||
        lower === "content-length" ||
        lower === "proxy-connection" ||
        lower === "transfer-encoding"
        ? lower
        : undefined;
}

/**
 * 1*DIGIT, nothing else: no sign, no list (`3, 3`), no HTAB anywhere (llhttp refuses one after the
 * digits; one before them is refused too, so the rule is simply "none"), at most 2^53 - 1.
 */
function contentLength(raw: Buffer, from: number, to: number, value: string): number {
    if (raw.subarray(from, to).includes(HTAB)) refuse("invalid_content_length", "HTAB in Content-Length");
    if (!/^[0-9]+$/.test(value)) refuse("invalid_content_length", `Content-Length ${JSON.stringify(value)}`);
    const n = Number(value);
    if (n > MAX_LENGTH) refuse("invalid_content_length", `Content-Length ${value} is over 2^53 - 1`);
    return n;
}

/**
 * Exactly `chunked` (any case, SP around it): the one coding a byte relay can frame. A list (`gzip,
 * chunked`), an empty value, `identity` or any other coding is refused, as is HTAB (llhttp refuses
 * `chunked<HTAB>`).
 */
function chunkedOnly(raw: Buffer, from: number, to: number, value: string): true {
    if (raw.subarray(from, to).includes(HTAB)) refuse("invalid_transfer_encoding", "HTAB in Transfer-Encoding");
    if (value.length !== 7 || value.toLowerCase() !== "chunked")
        refuse("invalid_transfer_encoding", `Transfer-Encoding ${JSON.stringify(value)} (only "chunked" is relayed)`);
    return true;
}

function connectionTokens(value: string, facts: FieldFacts): void {
    // Most lines hold one token: no list to split.
    if (value.indexOf(",") < 0) return connectionToken(value.trim().toLowerCase(), facts);
    for (const token of value.split(",")) connectionToken(token.trim().toLowerCase(), facts);
}

function connectionToken(t: string, facts: FieldFacts): void {
    if (t === "close") facts.close = true;
    else if (t === "keep-alive") facts.keepAlive = true;
}
