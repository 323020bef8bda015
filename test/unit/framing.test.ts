/**
 * The framing layer's own contract (src/service/gateway/framing), beside the differential suite's
 * verdicts: the reason each refusal carries, refusal at the first bad byte (not at the connection's
 * end), exact message ends for pipelined bytes, and re-emitted heads byte for byte.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
    ChunkedCounter,
    DEFAULT_LIMITS,
    emitHead,
    framingLimits,
    FramingError,
    hopByHop,
    LengthCounter,
    parseRequestHead,
    RequestStream,
    ResponseStream,
    type FramingReason,
} from "../../src/service/gateway/framing";

const b = (s: string) => Buffer.from(s, "latin1");
const G = "GET http://a/ HTTP/1.1\r\nHost: a\r\n";
const P = "POST http://a/ HTTP/1.1\r\nHost: a\r\n";
const PC = `${P}Transfer-Encoding: chunked\r\n\r\n`;
const ignore = { head: () => undefined, end: () => undefined };

/** The reason the layer gives for `input` (a request stream, or an answer to `method`), fed whole. */
function reason(input: string, method?: string): FramingReason | "accepted" {
    const stream = method ? new ResponseStream(method, ignore) : new RequestStream(ignore);
    try {
        stream.push(b(input));
        stream.finish();
        return "accepted";
    } catch (e) {
        assert.ok(e instanceof FramingError, String(e));
        return e.reason;
    }
}

test("each refusal names its rule", () => {
    const table: [string, FramingReason, string?][] = [
        [`${P}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n`, "content_length_with_transfer_encoding"],
        [`${P}Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc`, "duplicate_content_length"],
        [`${P}Content-Length: 3, 3\r\n\r\nabc`, "invalid_content_length"],
        [`${P}Transfer-Encoding: gzip, chunked\r\n\r\n`, "invalid_transfer_encoding"],
        ["POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "transfer_encoding_in_http10"],
        [`${G}X: a\r\n b\r\n\r\n`, "obs_fold"],
        ["GET / HTTP/1.1\nHost: a\n\n", "bare_lf"],
        [`${G}X: a\rb\r\n\r\n`, "bare_cr"],
        [`${G}X : a\r\n\r\n`, "invalid_field_name"],
        [`${G}X: a\x00\r\n\r\n`, "control_char"],
        ["get / HTTP/1.1\r\nHost: a\r\n\r\n", "unknown_method"],
        ["GET  / HTTP/1.1\r\nHost: a\r\n\r\n", "invalid_target"],
        ["GET / HTTP/1.1 \r\nHost: a\r\n\r\n", "invalid_start_line"],
        ["GET / HTTP/2.0\r\nHost: a\r\n\r\n", "unsupported_version"],
        ["GET / HTTP/1.1\r\n\r\n", "missing_host"],
        [`${G}Host: b\r\n\r\n`, "duplicate_host"],
        [`${G}X: ${"a".repeat(17_000)}\r\n\r\n`, "head_too_large"],
        [`${PC}g\r\n`, "invalid_chunk_size"],
        [`${PC}20000000000000\r\n`, "chunk_size_overflow"],
        [`${PC}3;a=\r\n`, "invalid_chunk_extension"],
        [`${PC}3;a=${"b".repeat(17_000)}\r\n`, "chunk_line_too_long"],
        [`${PC}3\r\nabcX`, "invalid_chunk_end"],
        [`${PC}0\r\nX T: 1\r\n\r\n`, "invalid_trailer"],
        [`${PC}0\r\ncontent-length: 1\r\n\r\n`, "framing_field_in_trailer"],
        [`${PC}0\r\nX: ${"a".repeat(17_000)}\r\n\r\n`, "trailers_too_large"],
        [`${P}Content-Length: 10\r\n\r\nabc`, "truncated"],
        [`${G}Connection: close\r\n\r\n${G}\r\n`, "data_after_close"],
        ["HTTP/1.1 099 X\r\n\r\n", "invalid_status", "GET"],
        ["HTTP/1.1 101 Switching Protocols\r\n\r\n", "protocol_switch", "GET"],
        ["HTTP/1.1 200 OK\r\n\r\n", "protocol_switch", "CONNECT"],
        ["", "no_response", "GET"],
        ["HTTP/1.1 200 OK\r\n", "truncated", "GET"],
    ];
    for (const [input, expected, method] of table)
        assert.equal(reason(input, method), expected, JSON.stringify(input.slice(0, 60)));
});

test("a bad byte is refused when it arrives, not when the connection ends", () => {
    for (const [input, at] of [
        [`${G}X: a\x00 and the rest of a long header`, G.length + 4],
        [`${G}X: a\nb`, G.length + 4],
        [`GET / HTTP/1.1\r\n Host: a`, 16],
        [`${PC}3\r\nabcXYZ`, PC.length + 6],
    ] as const) {
        const stream = new RequestStream(ignore);
        const bytes = b(input);
        let refusedAt = -1;
        for (let i = 0; i < bytes.length && refusedAt < 0; i++)
            try {
                stream.push(bytes.subarray(i, i + 1));
            } catch {
                refusedAt = i;
            }
        assert.equal(refusedAt, at, JSON.stringify(input));
        // A refused stream stays refused.
        assert.throws(() => stream.push(b("GET")), FramingError);
    }
});

test("a head that never ends is refused once it passes the limit, before the connection ends", () => {
    const stream = new RequestStream(ignore);
    const line = b(`X-${"a".repeat(1000)}: b\r\n`);
    stream.push(b(G));
    assert.throws(
        () => {
            for (let i = 0; i < 100; i++) stream.push(line);
        },
        (e: FramingError) => e.reason === "head_too_large",
    );
    assert.ok(stream.retainedBytes <= DEFAULT_LIMITS.maxHeadBytes);
});

test("counters stop at the message's last byte: pipelined bytes behind it are not consumed", () => {
    const body = b("3;x=1\r\nabc\r\n0\r\nT: 1\r\n\r\nGET / HTTP/1.1\r\n");
    const end = body.indexOf("GET");
    for (let cut = 0; cut <= body.length; cut++) {
        const c = new ChunkedCounter(DEFAULT_LIMITS);
        const content: Buffer[] = [];
        let at = c.consume(body.subarray(0, cut), 0, (d) => content.push(d));
        assert.equal(at, Math.min(cut, end));
        if (!c.done) at = cut + c.consume(body.subarray(cut), 0, (d) => content.push(d));
        assert.equal(at, end, `cut at ${cut}`);
        assert.ok(c.done);
        assert.equal(Buffer.concat(content).toString(), "abc");
    }
    const l = new LengthCounter(5);
    assert.equal(l.consume(b("xxhelloGET"), 2), 7);
    assert.ok(l.done);
});

test("an answer's end is exact too: what follows it is counted as extra, not read", () => {
    const events: string[] = [];
    const stream = new ResponseStream("GET", {
        head: (h) => events.push(`head ${h.status}`),
        body: (raw) => events.push(`body ${raw.toString()}`),
        end: () => events.push("end"),
    });
    stream.push(b("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nab"));
    stream.push(b("cHTTP/1.1 200 OK\r\n"));
    assert.deepEqual(events, ["head 100", "head 200", "body ab", "body c", "end"]);
    assert.equal(stream.extra, 17);
    assert.ok(stream.done);
});

test("a head re-emitted: the lines kept byte for byte, hop-by-hop ones and those Connection names dropped, lines added", () => {
    const head = parseRequestHead(
        b(
            "GET http://a/x HTTP/1.1\r\nHost: a\r\nProxy-Authorization: Basic eA==\r\nX-Odd:  sp\xe9ced \t\r\n" +
                "Connection: keep-alive, X-Drop, Content-Length, Host\r\nX-Drop: 1\r\nContent-Length: 0\r\nKeep-Alive: 5\r\n\r\n",
        ),
    );
    const out = emitHead(head, hopByHop(head), [
        ["Proxy-Authorization", "Basic bTpw"],
        ["X-Egress-Proxy", "m-1"],
    ]);
    assert.equal(
        out.toString("latin1"),
        "GET http://a/x HTTP/1.1\r\nHost: a\r\nX-Odd:  sp\xe9ced \t\r\nContent-Length: 0\r\n" +
            "Proxy-Authorization: Basic bTpw\r\nX-Egress-Proxy: m-1\r\n\r\n",
    );
    // The re-emitted head reads as the same request, minus what was dropped.
    assert.deepEqual(parseRequestHead(out).framing, { kind: "length", length: 0 });
    assert.equal(emitHead(head, new Set()).toString("latin1"), head.raw.toString("latin1"));
});

test("an added line cannot inject another: names are tokens, values hold no CR, LF or control byte", () => {
    const head = parseRequestHead(b(`${G}\r\n`));
    for (const add of [
        ["X-Egress-Proxy", "m\r\nX-Evil: 1"],
        ["X-Egress-Proxy", "m\n"],
        ["X-Egress-Proxy", "m\x00"],
        ["X Egress", "m"],
        ["", "m"],
        ["X-Egress-Proxy", "\u0100"],
    ] as const)
        assert.throws(() => emitHead(head, new Set(), [add]), RangeError, JSON.stringify(add));
});

test("limits: the defaults are node's, and a limit that is not a positive integer fails at construction", () => {
    assert.deepEqual(framingLimits(), { maxHeadBytes: 16384, maxChunkLineBytes: 16384, maxTrailerBytes: 16384 });
    assert.throws(() => framingLimits({ maxHeadBytes: 0 }), /`maxHeadBytes` must be a positive integer, not 0/);
    assert.throws(() => new RequestStream(ignore, { maxTrailerBytes: 1.5 }), /`maxTrailerBytes`/);
    assert.equal(reason(`${G}X: ${"a".repeat(100)}\r\n\r\n`), "accepted");
    const small = new RequestStream(ignore, { maxHeadBytes: 64 });
    assert.throws(() => small.push(b(`${G}X: ${"a".repeat(100)}\r\n\r\n`)), /a head over 64 bytes/);
});
