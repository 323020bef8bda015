import { FORBIDDEN, TCHAR } from "./chars";
import type { Head } from "./head";

/**
 * Headers that describe one connection (RFC 9110 §7.6.1) and so never cross a relay, as forward-http.ts
 * drops them. Transfer-Encoding is not among them here: a byte relay passes a chunked body on as it
 * came, so the line that says so stays with it.
 */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
]);

/**
 * Names `Connection` may never remove: dropping the framing fields would change where the relayed
 * message ends (`Connection: content-length` is a classic smuggling lever), and Host where it goes.
 */
const KEPT: ReadonlySet<string> = new Set(["content-length", "transfer-encoding", "host"]);

/**
 * The lower-case names a relay drops from `head`: HOP_BY_HOP and what its Connection lines name, but
 * KEPT. Most heads name nothing more (`Connection: keep-alive` or `close`): they share HOP_BY_HOP itself.
 */
export function hopByHop(head: Head): ReadonlySet<string> {
    let names: Set<string> | undefined;
    for (const f of head.fields)
        if (f.name.length === 10 && f.name.toLowerCase() === "connection")
            for (const token of f.value.split(",")) {
                const t = token.trim().toLowerCase();
                if (t !== "" && !KEPT.has(t) && !HOP_BY_HOP.has(t)) (names ??= new Set(HOP_BY_HOP)).add(t);
            }
    return names ?? HOP_BY_HOP;
}

/**
 * The head's bytes again, in one Buffer for one write: its start line, the lines whose lower-case names
 * `drop` does not hold (as they arrived, byte for byte, in order), then `add`'s lines, then CRLF. An
 * added name that is not a token or a value with CR, LF or another control byte throws: the gateway's
 * own values (a member id, credentials) must not be able to inject lines.
 */
export function emitHead(
    head: Head,
    drop: ReadonlySet<string>,
    add: readonly (readonly [string, string])[] = [],
): Buffer {
    const kept: number[] = [];
    let size = head.startLineEnd + 2;
    for (const f of head.fields)
        if (!drop.has(f.name.toLowerCase())) {
            // Adjacent kept lines are copied as one run.
            if (kept.length > 0 && kept[kept.length - 1] === f.start) kept[kept.length - 1] = f.end;
            else kept.push(f.start, f.end);
            size += f.end - f.start;
        }
    for (const [name, value] of add) {
        checkAdded(name, value);
        size += name.length + value.length + 4;
    }
    const out = Buffer.allocUnsafe(size);
    let at = head.raw.copy(out, 0, 0, head.startLineEnd);
    for (let i = 0; i < kept.length; i += 2) at += head.raw.copy(out, at, kept[i], kept[i + 1]);
    for (const [name, value] of add) at += out.write(`${name}: ${value}\r\n`, at, "latin1");
    out.write("\r\n", at, "latin1");
    return out;
}

function checkAdded(name: string, value: string): void {
    if (name.length === 0) throw new RangeError("an added header without a name");
    for (let i = 0; i < name.length; i++)
        if (!TCHAR[name.charCodeAt(i)])
            throw new RangeError(`added header name ${JSON.stringify(name)} is not a token`);
    for (let i = 0; i < value.length; i++) {
        const c = value.charCodeAt(i);
        if (c > 0xff || c === 0x0d || c === 0x0a || FORBIDDEN[c])
            throw new RangeError(`added header ${name}'s value has a byte no header may hold`);
    }
}
