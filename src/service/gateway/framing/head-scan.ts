import { CR, FORBIDDEN, HTAB, LF, SP } from "./chars";
import { refuse } from "./errors";

/**
 * Finds where a head ends in a stream of chunks, checking its line structure as bytes arrive: every
 * LF after a CR, every CR before an LF, no control byte, no line starting with whitespace (obs-fold),
 * and no more than `limit` bytes. A peer sending a broken head is refused at the first bad byte, not
 * when it stops sending; one sending a valid head slowly costs O(1) work per byte and at most `limit`
 * bytes held. Empty lines before the start line are skipped (RFC 9112 §2.2; llhttp does the same),
 * but count towards the limit.
 *
 * A head that arrives in one chunk is returned as a view of that chunk (no copy); one spread over
 * several is copied once into a buffer of at most `limit` bytes, kept for the next head.
 */
export class HeadScanner {
    /** Head bytes from earlier chunks; `held` of them are in use. */
    private buf: Buffer | undefined;
    private held = 0;
    /** Bytes consumed since the last head, blank lines included: what the limit counts. */
    private seen = 0;
    /** Bytes of the current line so far (CR excluded), and complete lines of this head so far. */
    private lineLen = 0;
    private lines = 0;
    /** The last byte was a CR: the next must be LF. */
    private cr = false;

    constructor(private readonly limit: number) {}

    /** Whether part of a head has arrived (blank lines before it do not count). */
    get started(): boolean {
        return this.lines > 0 || this.lineLen > 0 || this.held > 0;
    }

    /** Whether the stream stopped inside a head: at its end, that is a truncated message. */
    get pending(): boolean {
        return this.started || this.cr;
    }

    /** The bytes the scanner keeps allocated between calls: at most `limit`, and at most 4 KiB between heads. */
    get retainedBytes(): number {
        return this.buf?.length ?? 0;
    }

    /**
     * Reads `chunk` from `start`: the complete head and the offset just past it, or undefined when every
     * byte was taken and the head goes on. Throws a FramingError on the first byte that breaks a rule.
     */
    push(chunk: Buffer, start: number): { raw: Buffer; next: number } | undefined {
        // Never look further than one byte past the limit: a flood is refused after `limit` bytes.
        const stop = Math.min(chunk.length, start + (this.limit - this.seen) + 1);
        let from = start;
        for (let i = start; i < stop; i++) {
            const c = chunk[i];
            if (this.cr) {
                if (c !== LF) refuse("bare_cr", "a CR not followed by LF in a head");
                this.cr = false;
                if (this.lineLen > 0) {
                    this.lines++;
                    this.lineLen = 0;
                } else if (this.lines > 0) {
                    return this.complete(chunk, from, i + 1, start);
                } else {
                    // A blank line before the start line: skipped, and kept out of the head's bytes.
                    from = i + 1;
                }
            } else if (c === CR) {
                this.cr = true;
            } else if (c === LF) {
                refuse("bare_lf", "a line of a head ends in LF without CR");
            } else {
                if (this.lineLen === 0 && (c === SP || c === HTAB))
                    refuse(
                        this.lines > 0 ? "obs_fold" : "invalid_start_line",
                        this.lines > 0
                            ? "a header line starts with whitespace (obs-fold)"
                            : "whitespace before the start line",
                    );
                if (FORBIDDEN[c]) refuse("control_char", `control byte 0x${c.toString(16)} in a head`);
                this.lineLen++;
            }
        }
        this.seen += stop - start;
        if (this.seen > this.limit) refuse("head_too_large", `a head over ${this.limit} bytes`);
        // A CR that may end a blank line before the head stays out of it; any other byte is the head's.
        const keepTo = this.lines === 0 && this.lineLen === 0 && this.cr ? stop - 1 : stop;
        if (keepTo > from) this.hold(chunk, from, keepTo);
        return undefined;
    }

    /** The head ends at `end` in `chunk`: its bytes, and the scanner ready for the next head. */
    private complete(chunk: Buffer, from: number, end: number, start: number): { raw: Buffer; next: number } {
        if (this.seen + end - start > this.limit) refuse("head_too_large", `a head over ${this.limit} bytes`);
        let raw: Buffer;
        if (this.held === 0) raw = chunk.subarray(from, end);
        else {
            raw = Buffer.allocUnsafe(this.held + end - from);
            this.buf!.copy(raw, 0, 0, this.held);
            chunk.copy(raw, this.held, from, end);
        }
        this.seen = this.held = this.lineLen = this.lines = 0;
        // A buffer grown for a large head is not kept for the connection's life: the next one starts small.
        if (this.buf !== undefined && this.buf.length > 4096) this.buf = undefined;
        return { raw, next: end };
    }

    private hold(chunk: Buffer, from: number, to: number): void {
        const need = this.held + to - from;
        if (this.buf === undefined || this.buf.length < need) {
            const grown = Buffer.allocUnsafe(Math.min(this.limit, Math.max(need, 2 * (this.buf?.length ?? 512))));
            this.buf?.copy(grown, 0, 0, this.held);
            this.buf = grown;
        }
        chunk.copy(this.buf, this.held, from, to);
        this.held = need;
    }
}
