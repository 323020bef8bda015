import { type CatalogueEntry, EXIT } from "../../../model/error-catalogue";

/**
 * Why the framing layer refused a message. Each reason is one rule of docs/decisions/0086-framing.md ("A byte-level
 * framing layer for the gateway: strictness table"); the gateway maps them to its answers when it is
 * wired (a client's request → 400, a member's answer → 502), so they are codes, not prose.
 */
export type FramingReason =
    // Line structure, anywhere in a head or a trailer section.
    | "bare_lf"
    | "bare_cr"
    | "control_char"
    | "obs_fold"
    | "head_too_large"
    // The start line.
    | "invalid_start_line"
    | "unknown_method"
    | "invalid_target"
    | "unsupported_version"
    | "invalid_status"
    | "protocol_switch"
    // Fields that decide the framing.
    | "invalid_field_name"
    | "invalid_content_length"
    | "duplicate_content_length"
    | "content_length_with_transfer_encoding"
    | "invalid_transfer_encoding"
    | "transfer_encoding_in_http10"
    | "missing_host"
    | "duplicate_host"
    // A chunked body.
    | "invalid_chunk_size"
    | "chunk_size_overflow"
    | "invalid_chunk_extension"
    | "chunk_line_too_long"
    | "invalid_chunk_end"
    | "invalid_trailer"
    | "framing_field_in_trailer"
    | "trailers_too_large"
    // The stream of messages on one connection.
    | "truncated"
    | "data_after_close"
    | "no_response";

/** A message the framing layer will not relay: two parsers could read it two ways, or it is broken. */
export class FramingError extends Error {
    /** Never seen by the CLI (the gateway answers it 400 or 502), but every error class says its code. */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "FramingError" };
    }
    constructor(
        readonly reason: FramingReason,
        message: string,
    ) {
        super(message);
        this.name = "FramingError";
    }
}

/** Throws the refusal: a helper so the parsers' hot loops stay one line per rule. */
export function refuse(reason: FramingReason, message: string): never {
    throw new FramingError(reason, message);
}
