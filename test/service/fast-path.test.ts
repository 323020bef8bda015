/**
 * The lease routes have a fast path in front of Express (src/service/api/fast-path.ts). A chunked body
 * always goes through Express, so sending each request both ways must give the same status, headers
 * that matter, and body.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import { EMPTY_LOCAL_POOL, startTestService, TestService, TOKENS } from "../helpers/service";
import { teardown } from "../helpers/harness";

let svc: TestService;
const cleanup = teardown();
before(async () => {
    svc = await startTestService(EMPTY_LOCAL_POOL, { converge: false });
    cleanup.own(svc);
});

/** One POST; `chunked` omits Content-Length so Node sends Transfer-Encoding: chunked (the Express way). */
function post(
    path: string,
    body: string,
    token: string | null,
    chunked: boolean,
): Promise<{ status: number; retryAfter?: string; body: unknown }> {
    return new Promise((resolve, reject) => {
        const headers: Record<string, string> = { "content-type": "application/json" };
        if (token) headers.authorization = `Bearer ${token}`;
        if (!chunked) headers["content-length"] = String(Buffer.byteLength(body));
        const req = http.request(`${svc.url}${path}`, { method: "POST", headers }, (res) => {
            let text = "";
            res.on("data", (c) => (text += c));
            res.on("end", () =>
                resolve({
                    status: res.statusCode!,
                    retryAfter: res.headers["retry-after"] as string | undefined,
                    body: JSON.parse(text),
                }),
            );
        });
        req.on("error", reject);
        if (chunked) req.write(body.slice(0, 1));
        req.end(chunked ? body.slice(1) : body);
    });
}

const cases: [string, string, string, string | null][] = [
    ["no token", "/v1/leases", "{}", null],
    ["wrong scope", "/v1/leases", "{}", TOKENS.discover],
    ["malformed JSON", "/v1/leases", '{"pool":', TOKENS.lease],
    ["not an object", "/v1/leases", '"web"', TOKENS.lease],
    ["unknown field", "/v1/leases", '{"pool":"web","x":1}', TOKENS.lease],
    ["unknown pool", "/v1/leases", '{"pool":"nope"}', TOKENS.lease],
    ["empty pool", "/v1/leases", '{"pool":"web"}', TOKENS.lease],
    ["empty body", "/v1/leases", "", TOKENS.lease],
    ["bad session key", "/v1/leases", '{"pool":"web","session":"a_b"}', TOKENS.lease],
    ["session on an empty pool", "/v1/leases", '{"pool":"web","session":"s1"}', TOKENS.lease],
    ["release unknown", "/v1/leases/abc/release", '{"outcome":"ok"}', TOKENS.lease],
    ["release bad outcome", "/v1/leases/abc/release", '{"outcome":"nah"}', TOKENS.lease],
];

for (const [name, path, body, token] of cases) {
    test(`fast path and Express agree: ${name}`, async () => {
        const fast = await post(path, body, token, false);
        const slow = await post(path, body, token, true);
        assert.ok((fast.status >= 400 && fast.status < 500) || fast.status === 503, `4xx/503, got ${fast.status}`);
        assert.deepEqual(fast, slow);
    });
}
