/**
 * The gateway's framing layer (src/service/gateway/framing) against node:http on a table of hostile
 * and normal bytes (test/helpers/framing-cases.ts, framing-response-cases.ts): node reads each input over a real loopback
 * connection (a raw client to `http.createServer`, a raw server to `http.request`), the layer reads
 * it whole, one byte at a time and cut in two at every boundary. The layer's verdict must not depend on
 * the cuts; it must equal node's (same requests or answer, same heads, same body bytes, same end), or,
 * where the table says the layer is stricter, be a refusal where node accepted, every message accepted
 * before it being the same as node's: never a different acceptance.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import { isDeepStrictEqual } from "node:util";
import { METHODS } from "../../src/service/gateway/framing";
import { REQUESTS, type FramingCase } from "../helpers/framing-cases";
import { RESPONSES } from "../helpers/framing-response-cases";
import {
    chunkings,
    nodeRequestVerdicts,
    nodeResponseVerdicts,
    ourRequestVerdict,
    ourResponseVerdict,
    type RequestVerdict,
    type ResponseVerdict,
} from "../helpers/framing-node";

const bytes = (c: FramingCase) => Buffer.from(c.bytes, "latin1");
let nodeRequests: RequestVerdict[] = [];
let nodeResponses: ResponseVerdict[] = [];

before(async () => {
    nodeRequests = await nodeRequestVerdicts(REQUESTS.map((c) => ({ bytes: bytes(c), slow: c.slow })));
    nodeResponses = await nodeResponseVerdicts(RESPONSES.map((c) => ({ bytes: bytes(c), method: c.method ?? "GET" })));
});

test("the table names each input once and says why wherever the layer is stricter", () => {
    for (const table of [REQUESTS, RESPONSES]) {
        const names = table.map((c) => c.name);
        assert.deepEqual(names, [...new Set(names)]);
        for (const c of table) assert.notEqual(c.stricter, "", c.name);
    }
});

test("the layer knows exactly llhttp's methods: accepting another would be a different acceptance", () => {
    assert.deepEqual([...METHODS].sort(), [...http.METHODS].sort());
});

/** The layer's verdict on every cut of `c`, which must be the same for all of them. */
function oneVerdict<V>(c: FramingCase, read: (chunks: Buffer[]) => V): V {
    const cuts = chunkings(bytes(c));
    const whole = read(cuts[0]);
    for (const chunks of cuts.slice(1))
        assert.deepEqual(read(chunks), whole, `${c.name}: cut as ${chunks.map((b) => b.length).join("+")} bytes`);
    return whole;
}

/**
 * A refused connection's last request, if node reported its head but not one byte of its content: node
 * raises some framing errors (a Transfer-Encoding it cannot frame, a body that never came) after its
 * `request` event, the layer before handing the head out. Both refused the request at its head.
 */
function settled(v: RequestVerdict): RequestVerdict {
    const last = v.requests[v.requests.length - 1];
    if (v.end !== "refused" || !last || last.complete || last.body !== "") return v;
    return { ...v, requests: v.requests.slice(0, -1) };
}

/** Where ours and node's verdicts on `c` differ in a way the table does not allow, else undefined. */
function requestMismatch(c: FramingCase, ours: RequestVerdict, node: RequestVerdict): string | undefined {
    const [o, n] = [settled(ours), settled(node)];
    if (c.stricter === undefined)
        return isDeepStrictEqual(o, n) ? undefined : `${c.name}: ours ${JSON.stringify(o)}, node ${JSON.stringify(n)}`;
    if (o.end !== "refused") return `${c.name}: stricter must mean refused (${c.stricter})`;
    if (isDeepStrictEqual(o, n)) return `${c.name}: node refuses it too, the table's "stricter" is stale`;
    const different = o.requests.findIndex((r, i) => r.complete && !isDeepStrictEqual(r, n.requests[i]));
    return different < 0 ? undefined : `${c.name}: request ${different} accepted differently`;
}

/** The same for an answer: refused outright, or read as node read it with its connection refused after it. */
function responseMismatch(c: FramingCase, ours: ResponseVerdict, node: ResponseVerdict): string | undefined {
    if (c.stricter === undefined)
        return isDeepStrictEqual(ours, node)
            ? undefined
            : `${c.name}: ours ${JSON.stringify(ours)}, node ${JSON.stringify(node)}`;
    if (ours.outcome === "complete") return `${c.name}: stricter must mean refused (${c.stricter})`;
    if (isDeepStrictEqual(ours, node)) return `${c.name}: node refuses it too, the table's "stricter" is stale`;
    if (ours.outcome === "extra" && !isDeepStrictEqual({ ...ours, outcome: "complete" }, node))
        return `${c.name}: the answer was accepted differently`;
    return undefined;
}

test("requests: the layer's verdict is node's, or a refusal the table explains; whatever the cuts", (t) => {
    const wrong = REQUESTS.map((c, i) => requestMismatch(c, oneVerdict(c, ourRequestVerdict), nodeRequests[i]));
    assert.deepEqual(
        wrong.filter((w) => w !== undefined),
        [],
    );
    const stricter = REQUESTS.filter((c) => c.stricter !== undefined).length;
    t.diagnostic(`${REQUESTS.length} requests: ${REQUESTS.length - stricter} agree with node, ${stricter} stricter`);
});

test("responses: the layer's verdict is node's, or a refusal the table explains; whatever the cuts", (t) => {
    const wrong = RESPONSES.map((c, i) =>
        responseMismatch(
            c,
            oneVerdict(c, (chunks) => ourResponseVerdict(c.method ?? "GET", chunks)),
            nodeResponses[i],
        ),
    );
    assert.deepEqual(
        wrong.filter((w) => w !== undefined),
        [],
    );
    const stricter = RESPONSES.filter((c) => c.stricter !== undefined).length;
    t.diagnostic(`${RESPONSES.length} responses: ${RESPONSES.length - stricter} agree with node, ${stricter} stricter`);
});
