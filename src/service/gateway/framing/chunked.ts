import type { BodyCounter } from "./body";
import { CR, FORBIDDEN, HEX, HTAB, LF, QDTEXT, QPAIR, SP, TCHAR } from "./chars";
import { refuse } from "./errors";
import type { FramingLimits } from "./limits";

/** Where in the chunked grammar (RFC 9112 §7.1) the next byte falls. */
const enum S {
    SizeFirst,
    Size,
    ExtNameFirst,
    ExtName,
    ExtValueFirst,
    ExtToken,
    ExtQuoted,
    ExtPair,
    ExtAfterQuoted,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    TrailerFirst,
    TrailerName,
    TrailerValue,
    TrailerLf,
    EndLf,
    Done,
}

/**
 * Counts a chunked body byte for byte outside chunk data and in bulk inside it, holding nothing but
 * its state (a few numbers): chunk-size lines (hex only, at most 2^53 - 1, extensions `;name[=token
 * or "quoted"]` with no whitespace, as llhttp reads them), the CRLF after each chunk's data, the last
 * chunk and the trailer section (header lines without obs-fold, no Content-Length or
 * Transfer-Encoding, which llhttp refuses there too). It stops at the final CRLF, so a pipelined
 * message behind it is never consumed.
 */
export class ChunkedCounter implements BodyCounter {
    private s = S.SizeFirst;
    /** The chunk size being read, then the data bytes left of the chunk. */
    private size = 0;
    /** Bytes of the current chunk-size line, and of the trailer section. */
    private line = 0;
    private trailers = 0;
    /** The current trailer's name, lower-cased, while it could still be a framing field's. */
    private name = "";

    constructor(private readonly limits: FramingLimits) {}

    get done(): boolean {
        return this.s === S.Done;
    }

    consume(chunk: Buffer, start: number, content?: (data: Buffer) => void): number {
        let i = start;
        while (i < chunk.length && this.s !== S.Done) {
            if (this.s === S.Data) {
                const n = Math.min(this.size, chunk.length - i);
                content?.(chunk.subarray(i, i + n));
                this.size -= n;
                i += n;
                if (this.size === 0) this.s = S.DataCr;
            } else if (this.s < S.SizeLf) this.sizeLine(chunk[i++]);
            else this.structure(chunk[i++]);
        }
        return i;
    }

    finish(): void {
        if (this.s !== S.Done) refuse("truncated", "the connection ended inside a chunked body");
    }

    /** A byte of a chunk-size line, up to its CR. */
    private sizeLine(c: number): void {
        if (++this.line > this.limits.maxChunkLineBytes)
            refuse("chunk_line_too_long", `a chunk-size line over ${this.limits.maxChunkLineBytes} bytes`);
        switch (this.s) {
            case S.SizeFirst:
            case S.Size: {
                const d = HEX[c];
                if (d >= 0) {
                    if (this.size > (Number.MAX_SAFE_INTEGER - d) / 16)
                        refuse("chunk_size_overflow", "a chunk size over 2^53 - 1");
                    this.size = this.size * 16 + d;
                    this.s = S.Size;
                } else if (this.s === S.Size && (c === 0x3b || c === CR)) this.afterValue(c);
                else refuse("invalid_chunk_size", `byte 0x${c.toString(16)} in a chunk size`);
                return;
            }
            case S.ExtNameFirst:
                if (!TCHAR[c]) refuse("invalid_chunk_extension", "a chunk extension without a name");
                this.s = S.ExtName;
                return;
            case S.ExtName:
                if (c === 0x3d) this.s = S.ExtValueFirst;
                else if (!TCHAR[c]) this.afterValue(c);
                return;
            case S.ExtValueFirst:
                if (c === 0x22) this.s = S.ExtQuoted;
                else if (TCHAR[c]) this.s = S.ExtToken;
                else refuse("invalid_chunk_extension", "a chunk extension's `=` without a value");
                return;
            case S.ExtToken:
                if (!TCHAR[c]) this.afterValue(c);
                return;
            case S.ExtQuoted:
                if (c === 0x22) this.s = S.ExtAfterQuoted;
                else if (c === 0x5c) this.s = S.ExtPair;
                else if (!QDTEXT[c]) refuse("invalid_chunk_extension", "a byte not allowed in a quoted extension");
                return;
            case S.ExtPair:
                if (!QPAIR[c]) refuse("invalid_chunk_extension", "a quoted-pair of a byte not allowed");
                this.s = S.ExtQuoted;
                return;
            case S.ExtAfterQuoted:
                this.afterValue(c);
                return;
        }
    }

    /** After a size, a name or a value: another extension, or the line's CR. */
    private afterValue(c: number): void {
        if (c === 0x3b) this.s = S.ExtNameFirst;
        else if (c === CR) this.s = S.SizeLf;
        else refuse("invalid_chunk_extension", `byte 0x${c.toString(16)} in a chunk extension`);
    }

    /** A byte of the CRLFs around chunk data, or of the trailer section. */
    private structure(c: number): void {
        switch (this.s) {
            case S.SizeLf:
                if (c !== LF) refuse("bare_cr", "a chunk-size line's CR not followed by LF");
                this.line = 0;
                this.s = this.size > 0 ? S.Data : S.TrailerFirst;
                return;
            case S.DataCr:
                if (c !== CR) refuse("invalid_chunk_end", "chunk data not followed by CRLF");
                this.s = S.DataLf;
                return;
            case S.DataLf:
                if (c !== LF) refuse("invalid_chunk_end", "chunk data not followed by CRLF");
                this.s = S.SizeFirst;
                return;
            case S.EndLf:
                if (c !== LF) refuse("bare_cr", "a chunked body's last CR not followed by LF");
                this.s = S.Done;
                return;
        }
        if (++this.trailers > this.limits.maxTrailerBytes)
            refuse("trailers_too_large", `a trailer section over ${this.limits.maxTrailerBytes} bytes`);
        this.trailer(c);
    }

    /** A byte of a trailer line: `name ":" value CRLF`, the same rules as a head's lines. */
    private trailer(c: number): void {
        switch (this.s) {
            case S.TrailerFirst:
                if (c === CR) this.s = S.EndLf;
                else if (c === SP || c === HTAB) refuse("obs_fold", "a trailer line starts with whitespace");
                else if (!TCHAR[c]) refuse("invalid_trailer", "a trailer line that does not start with a name");
                else {
                    this.name = lower(c);
                    this.s = S.TrailerName;
                }
                return;
            case S.TrailerName:
                if (c === 0x3a) {
                    if (this.name === "content-length" || this.name === "transfer-encoding")
                        refuse("framing_field_in_trailer", `${this.name} in a trailer section`);
                    this.s = S.TrailerValue;
                } else if (!TCHAR[c]) refuse("invalid_trailer", "a trailer name that is not a token");
                // 17 letters is the longest name compared: longer ones stop growing the string.
                else if (this.name.length <= 17) this.name += lower(c);
                return;
            case S.TrailerValue:
                if (c === CR) this.s = S.TrailerLf;
                else if (c === LF) refuse("bare_lf", "a trailer line ends in LF without CR");
                else if (FORBIDDEN[c]) refuse("control_char", `control byte 0x${c.toString(16)} in a trailer`);
                return;
            case S.TrailerLf:
                if (c !== LF) refuse("bare_cr", "a trailer line's CR not followed by LF");
                this.s = S.TrailerFirst;
                return;
        }
    }
}

const lower = (c: number) => String.fromCharCode(c >= 0x41 && c <= 0x5a ? c | 0x20 : c);
