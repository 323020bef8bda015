import { LF, SP, TARGET } from "./chars";
import { refuse } from "./errors";
import { keepsAlive, NONE, versionAt, type BodyFraming, type Head } from "./head";
import { readFields } from "./fields";
import { HeadScanner } from "./head-scan";
import { framingLimits, type FramingLimits } from "./limits";

export interface RequestHead extends Head {
    readonly method: string;
    readonly target: string;
}

/**
 * The methods llhttp knows (node's `http.METHODS`): llhttp refuses any other, so accepting one here
 * would be a different acceptance, not a stricter one. test/integration/framing-differential.test.ts checks
 * this list against node's.
 */
export const METHODS: ReadonlySet<string> = new Set(
    "ACL BIND CHECKOUT CONNECT COPY DELETE GET HEAD LINK LOCK M-SEARCH MERGE MKACTIVITY MKCALENDAR MKCOL MOVE NOTIFY OPTIONS PATCH POST PROPFIND PROPPATCH PURGE PUT QUERY REBIND REPORT SEARCH SOURCE SUBSCRIBE TRACE UNBIND UNLINK UNLOCK UNSUBSCRIBE".split(
        " ",
    ),
);

/**
 * A complete request head (as HeadScanner hands it out): `method SP target SP HTTP/1.x CRLF`, single
 * spaces, a known method, a target of visible ASCII; then the fields, with the request's own rules:
 * HTTP/1.1 needs exactly one Host and HTTP/1.0 may not use Transfer-Encoding (RFC 9112 §3.2, §6.1).
 */
export function parseRequestHead(raw: Buffer): RequestHead {
    const eol = raw.indexOf(LF);
    const sp1 = raw.indexOf(SP);
    if (sp1 <= 0 || sp1 > eol) refuse("invalid_start_line", "a request line without a method");
    const method = raw.toString("latin1", 0, sp1);
    if (!METHODS.has(method)) refuse("unknown_method", `method ${JSON.stringify(method)}`);
    let t = sp1 + 1;
    while (TARGET[raw[t]]) t++;
    if (t === sp1 + 1 || raw[t] !== SP) refuse("invalid_target", "a request target that is empty or not visible ASCII");
    const target = raw.toString("latin1", sp1 + 1, t);
    if (t + 1 + 8 !== eol - 1) refuse("invalid_start_line", "a request line that does not end with its version");
    const version = versionAt(raw, t + 1);
    const facts = readFields(raw, eol + 1);
    if (facts.hosts > 1) refuse("duplicate_host", "more than one Host line");
    if (facts.hosts === 0 && version === "1.1") refuse("missing_host", "an HTTP/1.1 request without Host");
    if (facts.chunked && version === "1.0") refuse("transfer_encoding_in_http10", "Transfer-Encoding in HTTP/1.0");
    const framing: BodyFraming = facts.chunked
        ? { kind: "chunked" }
        : facts.contentLength !== undefined
          ? { kind: "length", length: facts.contentLength }
          : NONE;
    return {
        raw,
        startLineEnd: eol + 1,
        version,
        fields: facts.fields,
        framing,
        keepAlive: keepsAlive(version, facts),
        method,
        target,
    };
}

/** Request heads from a stream of chunks: HeadScanner's incremental checks, then parseRequestHead. */
export class RequestHeadParser {
    private readonly scanner: HeadScanner;

    constructor(limits: Partial<FramingLimits> = {}) {
        this.scanner = new HeadScanner(framingLimits(limits).maxHeadBytes);
    }

    /** Reads `chunk` from `start`: a head and the offset just past it, or undefined when all was taken. */
    push(chunk: Buffer, start = 0): { head: RequestHead; next: number } | undefined {
        const scanned = this.scanner.push(chunk, start);
        return scanned && { head: parseRequestHead(scanned.raw), next: scanned.next };
    }

    get started(): boolean {
        return this.scanner.started;
    }

    get pending(): boolean {
        return this.scanner.pending;
    }

    get retainedBytes(): number {
        return this.scanner.retainedBytes;
    }
}
