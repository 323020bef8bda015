/**
 * Requests Node's HTTP parser rejects before the app sees them (bad method, Content-Length with
 * Transfer-Encoding, oversized headers, bad chunks, an Expect other than 100-continue) get a JSON
 * `{error:{code,message}}` and a closed connection, not Node's empty 400/417; the service keeps
 * serving, and the rejected bytes (here: a token in them) never reach the log.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { rawHttp } from "../helpers/net";
import { EMPTY_LOCAL_POOL, startTestService, TestService, TOKENS } from "../helpers/service";
import { teardown } from "../helpers/harness";

let svc: TestService;
const cleanup = teardown();
before(async () => {
    svc = await startTestService(EMPTY_LOCAL_POOL, { converge: false });
    cleanup.own(svc);
});

const auth = `Authorization: Bearer ${TOKENS.lease}\r\n`;
const cases: { name: string; request: string; status: number; code: string; says: RegExp }[] = [
    {
        name: "unknown method",
        request: `FOO /v1/leases HTTP/1.1\r\nHost: x\r\n${auth}\r\n`,
        status: 400,
        code: "invalid_method",
        says: /HTTP method/,
    },
    {
        name: "Content-Length with Transfer-Encoding",
        request: `POST /v1/leases HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
        status: 400,
        code: "malformed_request",
        says: /Transfer-Encoding can't be present with Content-Length/,
    },
    {
        name: "Expect: 100-foo",
        request: `POST /v1/leases HTTP/1.1\r\nHost: x\r\n${auth}Expect: 100-foo\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`,
        status: 417,
        code: "expectation_failed",
        says: /100-continue/,
    },
    {
        name: "oversized headers",
        request: `GET /v1/proxies HTTP/1.1\r\nHost: x\r\n${auth}X-Big: ${"a".repeat(20_000)}\r\n\r\n`,
        status: 431,
        code: "headers_too_large",
        says: /headers/,
    },
    {
        name: "bad HTTP version",
        request: `GET /v1/proxies HTTP/7.3\r\nHost: x\r\n${auth}\r\n`,
        status: 400,
        code: "malformed_request",
        says: /version/i,
    },
    {
        name: "control character in the URL",
        request: `GET /v1/\x01proxies HTTP/1.1\r\nHost: x\r\n${auth}\r\n`,
        status: 400,
        code: "malformed_request",
        says: /url/i,
    },
    {
        name: "bad chunk size in a lease body",
        request: `POST /v1/leases HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
        status: 400,
        code: "malformed_request",
        says: /chunk size/,
    },
];

for (const c of cases) {
    test(`${c.name} → ${c.status} ${c.code} as JSON, connection closed`, async () => {
        const r = await rawHttp(svc.port, c.request);
        assert.equal(r.status, c.status, r.body);
        assert.equal(r.headers["content-type"], "application/json; charset=utf-8");
        assert.equal(r.headers.connection, "close");
        assert.equal(Number(r.headers["content-length"]), Buffer.byteLength(r.body));
        const body = JSON.parse(r.body);
        assert.equal(body.error.code, c.code);
        assert.match(body.error.message, c.says);
        assert.ok(r.closedByServer, "the server closed the connection");
    });
}

test("the service keeps serving after all that, and none of it is logged at error or with the token", async () => {
    assert.equal((await svc.call("GET", "/v1/proxies", { token: TOKENS.discover })).status, 200);
    const logs = svc.logs.join("");
    assert.ok(!logs.includes(TOKENS.lease), "the token in the rejected requests is not logged");
    assert.ok(
        svc.logs.some((l) => l.includes("malformed HTTP request answered") && l.includes("HPE_INVALID_METHOD")),
        "rejections are logged with the parser's code",
    );
    assert.deepEqual(
        svc.logs.map((l) => JSON.parse(l)).filter((l) => l.level >= 50),
        [],
    );
});
