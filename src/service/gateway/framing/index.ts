/**
 * The byte-level framing layer for the gateway's plain-HTTP relay (issue 34): strict incremental
 * parsers for request and response heads, body counters that say exactly where a message ends, and
 * head re-emission with lines dropped and added. Not wired into the gateway yet; docs/decisions/0086-framing.md ("A
 * byte-level framing layer for the gateway: strictness table") lists what it refuses and why.
 */
export { FramingError, type FramingReason } from "./errors";
export { DEFAULT_LIMITS, framingLimits, type FramingLimits } from "./limits";
export type { Field } from "./fields";
export type { BodyFraming, Head } from "./head";
export { METHODS, parseRequestHead, RequestHeadParser, type RequestHead } from "./request-head";
export { parseResponseHead, ResponseHeadParser, type ResponseHead } from "./response-head";
export { LengthCounter, UntilCloseCounter, type BodyCounter } from "./body";
export { ChunkedCounter } from "./chunked";
export { bodyCounter } from "./counter";
export { emitHead, hopByHop, HOP_BY_HOP } from "./emit";
export { RequestStream, ResponseStream, type MessageEvents, type RequestEvents } from "./streams";
