import { refuse } from "./errors";
import type { Field, FieldFacts } from "./fields";

/** Where a message's body ends: nowhere (no body), after N bytes, after the last chunk, or at the connection's end. */
export type BodyFraming =
    | { readonly kind: "none" }
    | { readonly kind: "length"; readonly length: number }
    | { readonly kind: "chunked" }
    | { readonly kind: "close" };

/** What request and response heads share. */
export interface Head {
    /** The head's bytes, start line to final CRLF: what is re-emitted (emit.ts). */
    readonly raw: Buffer;
    /** Just past the start line's CRLF: where the header lines begin in `raw`. */
    readonly startLineEnd: number;
    readonly version: "1.0" | "1.1";
    /** Every header line in order, as it arrived. */
    readonly fields: readonly Field[];
    readonly framing: BodyFraming;
    /** Whether the connection may carry another message after this one (RFC 9112 §9.3). */
    readonly keepAlive: boolean;
}

export const NONE: BodyFraming = Object.freeze({ kind: "none" });
export const CHUNKED: BodyFraming = Object.freeze({ kind: "chunked" });
export const CLOSE: BodyFraming = Object.freeze({ kind: "close" });

/** `HTTP/1.x` at `at` in `raw`, x being 0 or 1 (no other version is served: 0.9 has no head, 2 is not this syntax). */
export function versionAt(raw: Buffer, at: number): "1.0" | "1.1" {
    if (
        raw[at] === 0x48 &&
        raw[at + 1] === 0x54 &&
        raw[at + 2] === 0x54 &&
        raw[at + 3] === 0x50 &&
        raw[at + 4] === 0x2f &&
        raw[at + 5] === 0x31 &&
        raw[at + 6] === 0x2e &&
        (raw[at + 7] === 0x30 || raw[at + 7] === 0x31)
    )
        return raw[at + 7] === 0x31 ? "1.1" : "1.0";
    return refuse("unsupported_version", `version ${JSON.stringify(raw.toString("latin1", at, at + 8))}`);
}

/** Whether a message of `version` with these facts leaves the connection open (RFC 9112 §9.3; `close` wins). */
export function keepsAlive(version: "1.0" | "1.1", facts: FieldFacts): boolean {
    return !facts.close && (version === "1.1" || facts.keepAlive);
}
