/**
 * The framing layer holds nothing per message: 100,000 pipelined requests (plain, Content-Length and
 * chunked with trailers, heads cut across chunks so the head buffer is used) through one RequestStream,
 * and the heap after a full GC is where it was after the warm-up, within what a leak of 20 bytes per
 * request would exceed; the stream never holds more than one head limit between chunks.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as v8 from "node:v8";
import * as vm from "node:vm";
import { DEFAULT_LIMITS, RequestStream } from "../../src/service/gateway/framing";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

const TOTAL = 100_000;
const WARMUP = 5_000;
const PER_BATCH = 100;

/** PER_BATCH pipelined requests, a third of each kind. */
function batch(): Buffer {
    const kinds = [
        "GET http://a/x HTTP/1.1\r\nHost: a\r\nAccept: */*\r\nUser-Agent: soak\r\n\r\n",
        "POST http://a/form HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world",
        "POST http://a/up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;e=1\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
    ];
    return Buffer.from(Array.from({ length: PER_BATCH }, (_, i) => kinds[i % 3]).join(""), "latin1");
}

test("100,000 requests through one stream: heap flat, buffers bounded", () => {
    const bytes = batch();
    let heads = 0;
    let ends = 0;
    let bodyBytes = 0;
    let retained = 0;
    const stream = new RequestStream({
        head: () => void heads++,
        body: (raw) => void (bodyBytes += raw.length),
        end: () => void ends++,
    });
    // Chunks of 733 bytes: most heads and bodies straddle two chunks.
    const run = (batches: number) => {
        for (let n = 0; n < batches; n++) {
            for (let at = 0; at < bytes.length; at += 733) stream.push(bytes.subarray(at, at + 733));
            retained = Math.max(retained, stream.retainedBytes);
        }
    };
    run(WARMUP / PER_BATCH);
    gc();
    const before = process.memoryUsage().heapUsed;
    run((TOTAL - WARMUP) / PER_BATCH);
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    stream.finish();
    assert.equal(heads, TOTAL);
    assert.equal(ends, TOTAL);
    assert.ok(bodyBytes > TOTAL * 10, `${bodyBytes} body bytes`);
    assert.ok(retained > 0 && retained <= DEFAULT_LIMITS.maxHeadBytes, `held ${retained} bytes between chunks`);
    assert.ok(grown < 20 * (TOTAL - WARMUP), `the heap grew ${grown} bytes over ${TOTAL - WARMUP} requests`);
});
