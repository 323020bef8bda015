import { LF, SP } from "./chars";
import { refuse } from "./errors";
import { readFields, type FieldFacts } from "./fields";
import { HeadScanner } from "./head-scan";
import { framingLimits, type FramingLimits } from "./limits";
import { CHUNKED, CLOSE, keepsAlive, NONE, versionAt, type BodyFraming, type Head } from "./head";

export interface ResponseHead extends Head {
    readonly status: number;
    readonly reason: string;
    /** A 1xx answer (100, 102, 103, …): no body, and the final answer's head follows it. */
    readonly interim: boolean;
}

/**
 * A complete response head to a `method` request: `HTTP/1.x SP 3DIGIT [SP reason] CRLF`, a status of
 * 100–599 (RFC 9110 §15), then the fields with the same rules as a request's (duplicate or invalid
 * Content-Length, CL with TE, any coding but `chunked`, TE in HTTP/1.0: refused, even where the status
 * says there is no body: a member that sends them is not one to keep reading from).
 */
export function parseResponseHead(raw: Buffer, method: string): ResponseHead {
    const eol = raw.indexOf(LF);
    const version = versionAt(raw, 0);
    if (raw[8] !== SP) refuse("invalid_start_line", "a status line without a space after its version");
    const status = statusAt(raw, 9);
    // After the code: CRLF, or SP and a reason phrase (control bytes were refused by the scanner).
    if (raw[12] !== SP && 12 !== eol - 1) refuse("invalid_status", "a status code that is not 3 digits");
    const reason = raw[12] === SP ? raw.toString("latin1", 13, eol - 1) : "";
    const facts = readFields(raw, eol + 1);
    if (facts.chunked && version === "1.0") refuse("transfer_encoding_in_http10", "Transfer-Encoding in HTTP/1.0");
    const framing = responseFraming(method, status, facts);
    return {
        raw,
        startLineEnd: eol + 1,
        version,
        fields: facts.fields,
        framing,
        keepAlive: framing.kind !== "close" && keepsAlive(version, facts),
        status,
        reason,
        interim: status < 200,
    };
}

function statusAt(raw: Buffer, at: number): number {
    const d = (i: number) => raw[at + i] - 0x30;
    const [a, b, c] = [d(0), d(1), d(2)];
    if (!(a >= 0 && a <= 9 && b >= 0 && b <= 9 && c >= 0 && c <= 9))
        refuse("invalid_status", "a status code that is not 3 digits");
    const status = a * 100 + b * 10 + c;
    if (status < 100 || status > 599) refuse("invalid_status", `status ${status} (not 100–599)`);
    return status;
}

/**
 * RFC 9112 §6.3, in its order: a HEAD's answer, 1xx, 204 and 304 have no body whatever they say;
 * chunked; Content-Length; else the body runs to the connection's end. 101 is refused: the gateway never
 * asks to switch protocols (it drops Upgrade), so a member that does is not speaking HTTP/1.1 to it any
 * more. A 2xx to CONNECT is refused too: tunnels are forward-connect.ts's, not a relayed answer's.
 */
function responseFraming(method: string, status: number, facts: FieldFacts): BodyFraming {
    if (status === 101) refuse("protocol_switch", "101 Switching Protocols, which the gateway never asks for");
    if (method === "CONNECT" && status >= 200 && status < 300)
        refuse("protocol_switch", "a 2xx to CONNECT opens a tunnel, not an answer to relay");
    if (method === "HEAD" || status < 200 || status === 204 || status === 304) return NONE;
    if (facts.chunked) return CHUNKED;
    if (facts.contentLength !== undefined) return { kind: "length", length: facts.contentLength };
    return CLOSE;
}

/** Response heads from a stream of chunks; each call says which request's answer is read. */
export class ResponseHeadParser {
    private readonly scanner: HeadScanner;

    constructor(limits: Partial<FramingLimits> = {}) {
        this.scanner = new HeadScanner(framingLimits(limits).maxHeadBytes);
    }

    push(chunk: Buffer, start: number, method: string): { head: ResponseHead; next: number } | undefined {
        const scanned = this.scanner.push(chunk, start);
        return scanned && { head: parseResponseHead(scanned.raw, method), next: scanned.next };
    }

    get pending(): boolean {
        return this.scanner.pending;
    }

    get retainedBytes(): number {
        return this.scanner.retainedBytes;
    }
}
