import { refuse } from "./errors";

/**
 * Counts a body as its bytes go by, to know where the message ends: the relay passes the bytes on
 * unchanged and releases the connection when `done`. `consume` reads `chunk` from `start` and returns
 * the offset just past the body's last byte in it (bytes after it belong to the next message);
 * `content` gets the body's content (a chunked body's chunk data) when the caller wants it. `finish`
 * is the connection's end: a body that was not complete is refused as truncated.
 */
export interface BodyCounter {
    readonly done: boolean;
    consume(chunk: Buffer, start: number, content?: (data: Buffer) => void): number;
    finish(): void;
}

/** A body of exactly `length` bytes (Content-Length). */
export class LengthCounter implements BodyCounter {
    constructor(private remaining: number) {}

    get done(): boolean {
        return this.remaining === 0;
    }

    consume(chunk: Buffer, start: number, content?: (data: Buffer) => void): number {
        const n = Math.min(this.remaining, chunk.length - start);
        if (n > 0) {
            content?.(chunk.subarray(start, start + n));
            this.remaining -= n;
        }
        return start + n;
    }

    finish(): void {
        if (this.remaining > 0)
            refuse("truncated", `the connection ended ${this.remaining} bytes before the body's end`);
    }
}

/** A body that runs to the connection's end (a response with neither length nor chunks). */
export class UntilCloseCounter implements BodyCounter {
    private ended = false;

    get done(): boolean {
        return this.ended;
    }

    consume(chunk: Buffer, start: number, content?: (data: Buffer) => void): number {
        if (chunk.length > start) content?.(chunk.subarray(start));
        return chunk.length;
    }

    finish(): void {
        this.ended = true;
    }
}
