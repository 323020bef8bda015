/** The answers' half of the differential table (framing-cases.ts says how to read it). */
import { ABC, big, OLD_VERSION, TE_LIST, type FramingCase } from "./framing-cases";

const O = "HTTP/1.1 200 OK\r\n";
const OK = (body: string) => `${O}Content-Length: ${body.length}\r\n\r\n${body}`;
const RC = `${O}Transfer-Encoding: chunked\r\n\r\n`;

export const RESPONSES: FramingCase[] = [
    { name: "Content-Length", bytes: OK("abc") },
    { name: "until close", bytes: `${O}Server: x\r\n\r\nabcdef` },
    { name: "chunked with trailers", bytes: `${RC}3;e=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\n` },
    { name: "HEAD with Content-Length", bytes: `${O}Content-Length: 3\r\n\r\n`, method: "HEAD" },
    { name: "HEAD with chunked", bytes: `${RC}`, method: "HEAD" },
    { name: "204 with Content-Length", bytes: "HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n" },
    { name: "304 with Content-Length", bytes: "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n" },
    { name: "304 with chunked", bytes: "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n" },
    { name: "100 then 200", bytes: `HTTP/1.1 100 Continue\r\n\r\n${OK("abc")}` },
    { name: "103 then 200", bytes: `HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n${OK("abc")}` },
    {
        name: "100 with Content-Length, then 200",
        bytes: `HTTP/1.1 100 Continue\r\nContent-Length: 5\r\n\r\n${OK("abc")}`,
    },
    { name: "HTTP/1.0 with Content-Length", bytes: "HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nabc" },
    { name: "HTTP/1.0 until close", bytes: "HTTP/1.0 200 OK\r\n\r\nabc" },
    { name: "no reason phrase", bytes: "HTTP/1.1 200\r\nContent-Length: 3\r\n\r\nabc" },
    { name: "empty reason phrase", bytes: "HTTP/1.1 200 \r\nContent-Length: 3\r\n\r\nabc" },
    { name: "obs-text reason phrase", bytes: "HTTP/1.1 200 \xe9t\xe9\r\nContent-Length: 3\r\n\r\nabc" },
    { name: "CRLF before the status line", bytes: `\r\n${OK("abc")}` },
    { name: "bytes after a Content-Length body", bytes: `${OK("abc")}EXTRA` },
    { name: "bytes after a chunked body", bytes: `${RC}${ABC}EXTRA` },
    { name: "a body after HEAD's answer", bytes: OK("abc"), method: "HEAD" },
    { name: "a body after 204", bytes: "HTTP/1.1 204 No Content\r\n\r\nabc" },
    { name: "bytes after Connection: close", bytes: `${O}Connection: close\r\nContent-Length: 3\r\n\r\nabcXX` },
    { name: "bytes after Content-Length: 0", bytes: `${O}Content-Length: 0\r\n\r\nX` },
    {
        name: "Content-Length with Transfer-Encoding",
        bytes: `${O}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n${ABC}`,
    },
    { name: "two Content-Lengths", bytes: `${O}Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc` },
    {
        name: "204 with Content-Length and Transfer-Encoding",
        bytes: "HTTP/1.1 204 No Content\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
    },
    {
        name: "HEAD: Content-Length and Transfer-Encoding",
        bytes: `${O}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n`,
        method: "HEAD",
    },
    { name: "HEAD: two Content-Lengths", bytes: `${O}Content-Length: 3\r\nContent-Length: 4\r\n\r\n`, method: "HEAD" },
    { name: "204 with an invalid Content-Length", bytes: "HTTP/1.1 204 No Content\r\nContent-Length: x\r\n\r\n" },
    { name: "status 2000", bytes: "HTTP/1.1 2000 X\r\nContent-Length: 3\r\n\r\nabc" },
    { name: "status 20", bytes: "HTTP/1.1 20 X\r\nContent-Length: 3\r\n\r\nabc" },
    { name: "two spaces after the version", bytes: "HTTP/1.1  200 OK\r\nContent-Length: 3\r\n\r\nabc" },
    { name: "obs-fold", bytes: `${O}X: a\r\n b\r\nContent-Length: 3\r\n\r\nabc` },
    { name: "bare LF line endings", bytes: "HTTP/1.1 200 OK\nContent-Length: 3\n\nabc" },
    { name: "space before the colon", bytes: `${O}Content-Length : 3\r\n\r\nabc` },
    { name: "NUL in a value", bytes: `${O}X: a\x00\r\nContent-Length: 3\r\n\r\nabc` },
    { name: "body ends early (Content-Length)", bytes: `${O}Content-Length: 10\r\n\r\nabc` },
    { name: "body ends early (chunked)", bytes: `${RC}3\r\nab` },
    { name: "body ends before the last chunk", bytes: `${RC}3\r\nabc\r\n` },
    { name: "chunk size over 2^64", bytes: `${RC}10000000000000003\r\nabc\r\n0\r\n\r\n` },
    { name: "head ends early", bytes: `${O}Content-Length: 3\r\n` },
    { name: "no bytes", bytes: "" },
    { name: "head of 20 KiB", bytes: `${O}X: ${big(20_000)}\r\n\r\n` },
    {
        name: "101 Switching Protocols",
        bytes: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nabc",
    },
    // Stricter.
    {
        name: "Transfer-Encoding: gzip (until close)",
        bytes: `${O}Transfer-Encoding: gzip\r\n\r\nabc`,
        stricter: TE_LIST,
    },
    {
        name: "Transfer-Encoding: chunked, identity",
        bytes: `${O}Transfer-Encoding: chunked, identity\r\n\r\nabc`,
        stricter: TE_LIST,
    },
    {
        name: "Transfer-Encoding: gzip, chunked",
        bytes: `${O}Transfer-Encoding: gzip, chunked\r\n\r\n${ABC}`,
        stricter: TE_LIST,
    },
    { name: "Transfer-Encoding: xchunked", bytes: `${O}Transfer-Encoding: xchunked\r\n\r\nabc`, stricter: TE_LIST },
    { name: "Transfer-Encoding empty", bytes: `${O}Transfer-Encoding: \r\n\r\nabc`, stricter: TE_LIST },
    {
        name: "Transfer-Encoding in HTTP/1.0",
        bytes: `HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${ABC}`,
        stricter: "RFC 9112 §6.1: faulty framing in HTTP/1.0",
    },
    {
        name: "control byte in the reason phrase",
        bytes: "HTTP/1.1 200 O\x01K\r\nContent-Length: 3\r\n\r\nabc",
        stricter: "no control bytes anywhere in a head",
    },
    {
        name: "status 099",
        bytes: "HTTP/1.1 099 X\r\nContent-Length: 3\r\n\r\nabc",
        stricter: "RFC 9110 §15: statuses are 100–599",
    },
    {
        name: "status 600",
        bytes: "HTTP/1.1 600 X\r\nContent-Length: 3\r\n\r\nabc",
        stricter: "RFC 9110 §15: statuses are 100–599",
    },
    { name: "HTTP/2.0 status line", bytes: "HTTP/2.0 200 OK\r\nContent-Length: 3\r\n\r\nabc", stricter: OLD_VERSION },
    { name: "HTTP/0.9 status line", bytes: "HTTP/0.9 200 OK\r\nContent-Length: 3\r\n\r\nabc", stricter: OLD_VERSION },
    {
        name: "CRLF after a Content-Length body",
        bytes: `${OK("abc")}\r\n`,
        stricter: "any byte after an answer, CRLF too, means the member connection is not reused",
    },
];
