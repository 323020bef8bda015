/**
 * How much of a message the framing layer reads before it refuses. The defaults are node:http's own
 * (`--max-http-header-size` 16 KiB, llhttp's 16 KiB of chunk extensions), counted over at least the
 * bytes node counts, so the layer refuses whatever node refuses for size and never accepts more.
 */
export interface FramingLimits {
    /** The most bytes a head may have, start line, blank lines before it and final CRLF included. */
    maxHeadBytes: number;
    /** The most bytes a chunk-size line may have before its CRLF (the size and its extensions). */
    maxChunkLineBytes: number;
    /** The most bytes a chunked body's trailer section may have. */
    maxTrailerBytes: number;
}

export const DEFAULT_LIMITS: Readonly<FramingLimits> = Object.freeze({
    maxHeadBytes: 16 * 1024,
    maxChunkLineBytes: 16 * 1024,
    maxTrailerBytes: 16 * 1024,
});

/** The limits with `given` over the defaults; a limit that is not a positive integer fails here, not mid-stream. */
export function framingLimits(given: Partial<FramingLimits> = {}): FramingLimits {
    // The usual case, once per message read: nothing given, nothing to check.
    if (
        given.maxHeadBytes === undefined &&
        given.maxChunkLineBytes === undefined &&
        given.maxTrailerBytes === undefined
    )
        return DEFAULT_LIMITS;
    const limits = { ...DEFAULT_LIMITS, ...given };
    for (const [k, v] of Object.entries(limits))
        if (!Number.isSafeInteger(v) || v <= 0) throw new RangeError(`\`${k}\` must be a positive integer, not ${v}`);
    return limits;
}
