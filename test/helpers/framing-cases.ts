/**
 * The differential table of test/integration/framing-differential.test.ts: hostile and normal HTTP/1.1 bytes
 * (latin1 strings), each read by node:http and by the gateway's framing layer (the answers' half is in
 * framing-response-cases.ts). An entry without `stricter` must get the same verdict from both; one with
 * `stricter` is where the layer deliberately refuses what node (llhttp 9, strict mode) accepts, and says
 * why (docs/decisions/0086-framing.md, "A byte-level framing layer for the gateway: strictness table"). `slow`
 * delivers the bytes to node one byte per event-loop turn.
 */
export interface FramingCase {
    name: string;
    bytes: string;
    stricter?: string;
    slow?: boolean;
    /** For responses: the request's method (GET unless said). */
    method?: string;
}

const G = "GET http://a/ HTTP/1.1\r\nHost: a\r\n";
const P = "POST http://a/ HTTP/1.1\r\nHost: a\r\n";
/** A chunked POST's head: its body follows. */
const PC = `${P}Transfer-Encoding: chunked\r\n\r\n`;
export const ABC = "3\r\nabc\r\n0\r\n\r\n";
export const big = (n: number) => "a".repeat(n);

const TWO_HOSTS = "two Host lines: RFC 9112 §3.2 says 400; a member could route by either";
export const TE_LIST = "only a lone `chunked` is relayed: codings lists are where parsers disagree";
export const OLD_VERSION = "only HTTP/1.0 and 1.1 heads are served";
const BARE_LF = "bare LF is refused everywhere, also between messages";
const SAFE_INT = "sizes over 2^53 - 1 (8 PiB) cannot be counted exactly in a JS number";

export const REQUESTS: FramingCase[] = [
    // Normal traffic, every framing.
    { name: "GET absolute-form", bytes: `${G}Accept: */*\r\nUser-Agent: t\r\n\r\n` },
    { name: "POST with Content-Length", bytes: `${P}Content-Length: 5\r\n\r\nhello` },
    {
        name: "POST chunked, extensions, trailers",
        bytes: `${PC}3;a=b;c="d\\"e"\r\nabc\r\n2;x\r\nde\r\n0;y=z\r\nX-T: 1\r\n\r\n`,
    },
    { name: "pipelined: POST then GET", bytes: `${P}Content-Length: 3\r\n\r\nabc${G}\r\n` },
    { name: "pipelined: chunked then GET", bytes: `${PC}${ABC}${G}\r\n` },
    { name: "GET with a body", bytes: `${G}Content-Length: 2\r\n\r\nhi` },
    {
        name: "HTTP/1.0 keep-alive, pipelined",
        bytes: "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\nGET / HTTP/1.0\r\n\r\n",
    },
    { name: "OPTIONS *", bytes: "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n" },
    { name: "CONNECT and tunnel bytes", bytes: "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n\x16\x03\x01" },
    { name: "values: obs-text, HTAB, OWS, empty", bytes: `${G}X: a\xe9\xffb\r\nY:\ta\tb \t\r\nZ:\r\n\r\n` },
    { name: "CRLF before the request line", bytes: `\r\n\r\n${G}\r\n` },
    { name: "CRLF between pipelined requests", bytes: `${G}\r\n\r\n\r\n${G}\r\n` },
    { name: "Connection: close, then CRLF", bytes: `${G}Connection: close\r\n\r\n\r\n` },
    { name: "Expect: 100-continue", bytes: `${P}Expect: 100-continue\r\nContent-Length: 1\r\n\r\nx` },
    { name: "Upgrade read as a plain request", bytes: `${G}Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n` },
    { name: "head of 12 KiB", bytes: `${G}X: ${big(12_000)}\r\n\r\n` },
    {
        name: "chunk sizes: upper case, leading zeros, 000",
        bytes: `${PC}A\r\n0123456789\r\n0003\r\nabc\r\n000\r\n\r\n`,
    },
    { name: "chunk extension quoted obs-text", bytes: `${PC}3;a="b\xe9"\r\nabc\r\n0\r\n\r\n` },
    { name: "chunk extension of 10 KiB", bytes: `${PC}3;a=${big(10_000)}\r\nabc\r\n0\r\n\r\n` },
    { name: "Host in a trailer", bytes: `${PC}0\r\nHost: x\r\n\r\n` },
    { name: "Transfer-Encoding: Chunked, SP around", bytes: `${P}Transfer-Encoding:  Chunked \r\n\r\n${ABC}` },
    { name: "Content-Length 003, SP around", bytes: `${P}Content-Length:  003 \r\n\r\nabc` },
    { name: "target of any visible ASCII", bytes: 'GET /"{}|\\^`<>#[] HTTP/1.1\r\nHost: a\r\n\r\n' },
    { name: "no bytes", bytes: "" },
    { name: "only CRLF", bytes: "\r\n" },
    { name: "slowloris head, one byte per turn", bytes: `${G}Accept: */*\r\nX-Long: ${big(200)}\r\n\r\n`, slow: true },
    // Hostile: both refuse.
    {
        name: "Content-Length with Transfer-Encoding",
        bytes: `${P}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n${ABC}`,
    },
    {
        name: "Transfer-Encoding then Content-Length",
        bytes: `${P}Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n${ABC}`,
    },
    { name: "two equal Content-Lengths", bytes: `${P}Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc` },
    { name: "two different Content-Lengths", bytes: `${P}Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd` },
    { name: "Content-Length list 3, 3", bytes: `${P}Content-Length: 3, 3\r\n\r\nabc` },
    { name: "Content-Length +3", bytes: `${P}Content-Length: +3\r\n\r\nabc` },
    { name: "Content-Length 0x3", bytes: `${P}Content-Length: 0x3\r\n\r\nabc` },
    { name: "Content-Length -1", bytes: `${P}Content-Length: -1\r\n\r\n` },
    { name: "Content-Length empty", bytes: `${P}Content-Length: \r\n\r\n` },
    { name: "Content-Length 1 2", bytes: `${P}Content-Length: 1 2\r\n\r\n` },
    { name: "Content-Length 3<HTAB>", bytes: `${P}Content-Length: 3\t\r\n\r\nabc` },
    { name: "Content-Length over 2^64", bytes: `${P}Content-Length: 99999999999999999999\r\n\r\n` },
    { name: "Transfer-Encoding: chunked, identity", bytes: `${P}Transfer-Encoding: chunked, identity\r\n\r\n${ABC}` },
    { name: "Transfer-Encoding: xchunked", bytes: `${P}Transfer-Encoding: xchunked\r\n\r\n${ABC}` },
    { name: "Transfer-Encoding: identity", bytes: `${P}Transfer-Encoding: identity\r\n\r\n` },
    { name: "Transfer-Encoding: chunked, chunked", bytes: `${P}Transfer-Encoding: chunked, chunked\r\n\r\n${ABC}` },
    {
        name: "two Transfer-Encoding: chunked lines",
        bytes: `${P}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n${ABC}`,
    },
    { name: "Transfer-Encoding: chunked,", bytes: `${P}Transfer-Encoding: chunked,\r\n\r\n${ABC}` },
    { name: "Transfer-Encoding: chunked<HTAB>", bytes: `${P}Transfer-Encoding: chunked\t\r\n\r\n${ABC}` },
    { name: "obs-fold", bytes: `${G}X: a\r\n b\r\n\r\n` },
    { name: "obs-fold on the first header line", bytes: "GET / HTTP/1.1\r\n Host: a\r\n\r\n" },
    { name: "bare LF line endings", bytes: "GET / HTTP/1.1\nHost: a\n\n" },
    { name: "bare LF after a header", bytes: `${G}X: a\n\r\n` },
    { name: "bare CR in a value", bytes: `${G}X: a\rb\r\n\r\n` },
    { name: "CR CR LF", bytes: `${G}X: a\r\r\n\r\n` },
    { name: "space before the colon", bytes: `${G}Content-Length : 3\r\n\r\nabc` },
    { name: "HTAB before the colon", bytes: `${G}X\t: a\r\n\r\n` },
    { name: "header name with a space", bytes: `${G}X Y: a\r\n\r\n` },
    { name: "empty header name", bytes: `${G}: a\r\n\r\n` },
    { name: "header line without colon", bytes: `${G}XY\r\n\r\n` },
    { name: "header name with (", bytes: `${G}X(Y: a\r\n\r\n` },
    { name: "header name with obs-text", bytes: `${G}X\xe9: a\r\n\r\n` },
    { name: "NUL in a value", bytes: `${G}X: a\x00b\r\n\r\n` },
    { name: "DEL in a value", bytes: `${G}X: a\x7fb\r\n\r\n` },
    { name: "0x01 in a value", bytes: `${G}X: a\x01b\r\n\r\n` },
    { name: "VT in a value", bytes: `${G}X: a\x0bb\r\n\r\n` },
    { name: "NUL in the method", bytes: "G\x00ET / HTTP/1.1\r\nHost: a\r\n\r\n" },
    { name: "control byte in the target", bytes: "GET /a\x01b HTTP/1.1\r\nHost: a\r\n\r\n" },
    { name: "HTAB in the target", bytes: "GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n" },
    { name: "non-ASCII target", bytes: "GET /\xe9 HTTP/1.1\r\nHost: a\r\n\r\n" },
    { name: "HTAB after the method", bytes: "GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n" },
    { name: "lower-case method", bytes: "get / HTTP/1.1\r\nHost: a\r\n\r\n" },
    { name: "unknown method", bytes: "FOO / HTTP/1.1\r\nHost: a\r\n\r\n" },
    { name: "HTTP/1.2", bytes: "GET / HTTP/1.2\r\nHost: a\r\n\r\n" },
    { name: "http/1.1", bytes: "GET / http/1.1\r\nHost: a\r\n\r\n" },
    { name: "space after the version", bytes: "GET / HTTP/1.1 \r\nHost: a\r\n\r\n" },
    { name: "chunk size then SP then extension", bytes: `${PC}3 ;a=b\r\nabc\r\n0\r\n\r\n` },
    { name: "chunk extension a = b", bytes: `${PC}3;a = b\r\nabc\r\n0\r\n\r\n` },
    { name: "chunk extension ; alone", bytes: `${PC}3;\r\nabc\r\n0\r\n\r\n` },
    { name: "chunk extension a==b", bytes: `${PC}3;a==b\r\nabc\r\n0\r\n\r\n` },
    { name: "chunk extension token with obs-text", bytes: `${PC}3;a=b\xe9\r\nabc\r\n0\r\n\r\n` },
    { name: "chunk extension junk after quotes", bytes: `${PC}3;a="b"c\r\nabc\r\n0\r\n\r\n` },
    { name: "chunk extension quoted control byte", bytes: `${PC}3;a="b\x01"\r\nabc\r\n0\r\n\r\n` },
    { name: "chunk extension quoted-pair of a control", bytes: `${PC}3;a="\\\x01"\r\nabc\r\n0\r\n\r\n` },
    { name: "chunk extension of 20 KiB", bytes: `${PC}3;a=${big(20_000)}\r\nabc\r\n0\r\n\r\n` },
    { name: "chunk size then SP", bytes: `${PC}3 \r\nabc\r\n0\r\n\r\n` },
    { name: "chunk size 0x3", bytes: `${PC}0x3\r\nabc\r\n0\r\n\r\n` },
    { name: "chunk size -3", bytes: `${PC}-3\r\nabc\r\n0\r\n\r\n` },
    { name: "chunk size empty", bytes: `${PC}\r\nabc\r\n0\r\n\r\n` },
    { name: "chunk size over 2^64", bytes: `${PC}10000000000000003\r\nabc\r\n0\r\n\r\n` },
    { name: "chunk data longer than its size", bytes: `${PC}3\r\nabcX\r\n0\r\n\r\n` },
    { name: "chunk data ends in bare LF", bytes: `${PC}3\r\nabc\n0\r\n\r\n` },
    { name: "chunk data followed by XY, not CRLF", bytes: `${PC}3\r\nabcXY0\r\n\r\n` },
    { name: "chunk data then CR then X", bytes: `${PC}3\r\nabc\rX0\r\n\r\n` },
    { name: "chunk size line CR then X", bytes: `${PC}3\rXabc\r\n0\r\n\r\n` },
    { name: "trailer line CR then X", bytes: `${PC}0\r\nX: 1\rY\r\n\r\n` },
    { name: "last CR of a chunked body then X", bytes: `${PC}0\r\n\rX` },
    { name: "chunk size line ends in bare LF", bytes: `${PC}3\nabc\r\n0\r\n\r\n` },
    { name: "trailer obs-fold", bytes: `${PC}${ABC.slice(0, -2)}X-T: 1\r\n 2\r\n\r\n` },
    { name: "trailer name with a space", bytes: `${PC}0\r\nX T: 1\r\n\r\n` },
    { name: "trailer without colon", bytes: `${PC}0\r\nXY\r\n\r\n` },
    { name: "trailer NUL", bytes: `${PC}0\r\nX: \x00\r\n\r\n` },
    { name: "trailer section ends in bare LF", bytes: `${PC}3\r\nabc\r\n0\r\n\n` },
    { name: "Content-Length in a trailer", bytes: `${PC}0\r\nContent-Length: 5\r\n\r\n` },
    { name: "Transfer-Encoding in a trailer", bytes: `${PC}0\r\nTransfer-Encoding: chunked\r\n\r\n` },
    { name: "trailers of 18 KiB", bytes: `${PC}0\r\nY: ${big(9000)}\r\nZ: ${big(9000)}\r\n\r\n` },
    { name: "pipelined, the second invalid", bytes: `${G}\r\n${G}X : y\r\n\r\n` },
    { name: "a request after Connection: close", bytes: `${G}Connection: close\r\n\r\n${G}\r\n` },
    {
        name: "a request after Connection: keep-alive, close",
        bytes: `${G}Connection: keep-alive, close\r\n\r\n${G}\r\n`,
    },
    { name: "a request after Proxy-Connection: close", bytes: `${G}Proxy-Connection: close\r\n\r\n${G}\r\n` },
    { name: "a request after HTTP/1.0 without keep-alive", bytes: "GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\n\r\n" },
    { name: "body ends early (Content-Length)", bytes: `${P}Content-Length: 10\r\n\r\nabc` },
    { name: "body ends early (chunked)", bytes: `${PC}3\r\nab` },
    { name: "body ends before the last chunk", bytes: `${PC}3\r\nabc\r\n` },
    { name: "head ends early", bytes: G },
    { name: "head of 20 KiB", bytes: `${G}X: ${big(20_000)}\r\n\r\n` },
    { name: "slowloris head with NUL", bytes: `${G}Accept: */*\r\nX: a\x00\r\n\r\n`, slow: true },
    // Stricter: node accepts, the layer refuses.
    { name: "two Host lines", bytes: "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", stricter: TWO_HOSTS },
    {
        name: "no Host in HTTP/1.1",
        bytes: "GET / HTTP/1.1\r\n\r\n",
        stricter: "RFC 9112 §3.2; node's server refuses it too (requireHostHeader, not llhttp)",
    },
    {
        name: "Transfer-Encoding: gzip, chunked",
        bytes: `${P}Transfer-Encoding: gzip, chunked\r\n\r\n${ABC}`,
        stricter: TE_LIST,
    },
    {
        name: "two Transfer-Encoding lines",
        bytes: `${P}Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n${ABC}`,
        stricter: TE_LIST,
    },
    { name: "Transfer-Encoding: ,chunked", bytes: `${P}Transfer-Encoding: ,chunked\r\n\r\n${ABC}`, stricter: TE_LIST },
    {
        name: "Transfer-Encoding empty",
        bytes: `${P}Transfer-Encoding: \r\n\r\n`,
        stricter: "node reads an empty coding as none; the layer reads it as invalid",
    },
    {
        name: "Transfer-Encoding in HTTP/1.0",
        bytes: `POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n${ABC}`,
        stricter: "RFC 9112 §6.1: faulty framing in HTTP/1.0",
    },
    {
        name: "Content-Length <HTAB>3",
        bytes: `${P}Content-Length:\t3\r\n\r\nabc`,
        stricter: "no HTAB in framing fields at all (llhttp refuses it after the value, not before)",
    },
    {
        name: "two spaces after the method",
        bytes: "GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
        stricter: "RFC 9112 §3: single SP; whitespace-tolerant request lines are a desync lever",
    },
    { name: "HTTP/2.0 request line", bytes: "GET / HTTP/2.0\r\nHost: a\r\n\r\n", stricter: OLD_VERSION },
    { name: "HTTP/0.9 request line", bytes: "GET / HTTP/0.9\r\nHost: a\r\n\r\n", stricter: OLD_VERSION },
    { name: "request line without version", bytes: "GET /\r\n\r\n", stricter: OLD_VERSION },
    { name: "Content-Length 2^53 + 1", bytes: `${P}Content-Length: 9007199254740993\r\n\r\nabc`, stricter: SAFE_INT },
    { name: "chunk size 2^60 - 1", bytes: `${PC}fffffffffffffff\r\nabc\r\n0\r\n\r\n`, stricter: SAFE_INT },
    {
        name: "chunk extension a= (empty value)",
        bytes: `${PC}3;a=\r\nabc\r\n0\r\n\r\n`,
        stricter: "RFC 9112 §7.1.1: a value is a token or a quoted-string",
    },
    { name: "bare LF before the request line", bytes: `\n${G}\r\n`, stricter: BARE_LF },
    { name: "bare LF between pipelined requests", bytes: `${G}\r\n\n${G}\r\n`, stricter: BARE_LF },
    {
        name: "head just over 16 KiB",
        bytes: `${G}X: ${big(16_350)}\r\n\r\n`,
        stricter: "16,390 bytes: the limit counts the start line too, node does not",
    },
];
