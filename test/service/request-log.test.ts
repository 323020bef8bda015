/**
 * Request log levels: deliberate answers (every 4xx, 503 none_available and not_ready) are logged
 * without a stack, the "try later" 503s at debug, client mistakes at info; only a real server fault
 * is logged at error, once, with the stack of what was thrown. Both lease paths (fast and Express).
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import { createLogger } from "../../src/log/logger";
import { startTestService, TestService, TOKENS } from "../helpers/service";
import { teardown } from "../helpers/harness";

const lines: string[] = [];
const log = createLogger({ level: "debug", destination: { write: (s: string) => void lines.push(s) } });
let svc: TestService;
const cleanup = teardown();
before(async () => {
    svc = await startTestService(
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [{ name: "web", provider: "local", replicas: 0, maxReplicas: 2 }],
        },
        { converge: false, log },
    );
    cleanup.own(svc);
});

/** A POST tagged with `x-case` (logged with the request headers); `chunked` sends it the Express way. */
function post(tag: string, path: string, body: string, token: string | null, chunked = false): Promise<number> {
    return new Promise((resolve, reject) => {
        const headers: Record<string, string> = { "content-type": "application/json", "x-case": tag };
        if (token) headers.authorization = `Bearer ${token}`;
        if (!chunked) headers["content-length"] = String(Buffer.byteLength(body));
        const req = http.request(`${svc.url}${path}`, { method: "POST", headers }, (res) => {
            res.resume();
            res.on("end", () => resolve(res.statusCode!));
        });
        req.on("error", reject);
        req.end(body);
    });
}

/** The request log lines of the requests tagged `tag` (the line is written when the response finishes). */
async function linesOf(tag: string): Promise<any[]> {
    await new Promise((r) => setTimeout(r, 50));
    return lines.map((l) => JSON.parse(l)).filter((l) => l.req?.headers?.["x-case"] === tag);
}

for (const chunked of [false, true]) {
    const way = chunked ? "Express" : "fast path";
    test(`${way}: 503 none_available is one debug line with its code and no stack`, async () => {
        const tag = `none-${chunked}`;
        assert.equal(await post(tag, "/v1/leases", '{"pool":"web"}', TOKENS.lease, chunked), 503);
        const [line, ...more] = await linesOf(tag);
        assert.deepEqual(more, []);
        assert.equal(line.level, 20, JSON.stringify(line));
        assert.equal(line.error, "none_available");
        assert.equal(line.res.statusCode, 503);
        assert.equal(line.err, undefined);
        assert.ok(!JSON.stringify(line).includes("stack"), "no stack trace");
    });

    test(`${way}: 4xx answers are info lines with their code and no stack`, async () => {
        for (const [tag, body, token, status, code] of [
            [`unauth-${chunked}`, "{}", null, 401, "unauthenticated"],
            [`bad-${chunked}`, '{"ttlSeconds":0}', TOKENS.lease, 400, "invalid_request"],
            [`json-${chunked}`, '{"pool":', TOKENS.lease, 400, "malformed_json"],
        ] as const) {
            assert.equal(await post(tag, "/v1/leases", body, token, chunked), status);
            const [line, ...more] = await linesOf(tag);
            assert.deepEqual(more, []);
            assert.equal(line.level, 30, JSON.stringify(line));
            assert.equal(line.error, code);
            assert.ok(!JSON.stringify(line).includes("stack"), "no stack trace");
        }
    });
}

test("at info, a 503 none_available writes nothing and a 401 one line", async () => {
    log.level = "info";
    try {
        assert.equal(await post("quiet-503", "/v1/leases", '{"pool":"web"}', TOKENS.lease), 503);
        assert.equal(await post("quiet-401", "/v1/leases", "{}", "wrong-token-0123456789"), 401);
        assert.equal((await linesOf("quiet-503")).length, 0);
        assert.equal((await linesOf("quiet-401")).length, 1);
    } finally {
        log.level = "debug";
    }
});

test("a real fault is one error line carrying the thrown error's stack; the client sees a generic 500", async () => {
    const acquire = svc.fleet.acquire;
    svc.fleet.acquire = () => {
        throw new Error("injected fault 7f3a");
    };
    try {
        for (const chunked of [false, true]) {
            const tag = `fault-${chunked}`;
            assert.equal(await post(tag, "/v1/leases", "{}", TOKENS.lease, chunked), 500);
            const [line, ...more] = await linesOf(tag);
            assert.deepEqual(more, []);
            assert.equal(line.level, 50);
            assert.equal(line.err.message, "injected fault 7f3a");
            assert.match(line.err.stack, /injected fault 7f3a\n\s+at /);
        }
        assert.equal(
            lines.filter((l) => l.includes("injected fault 7f3a")).length,
            2,
            "logged once per request, not twice",
        );
    } finally {
        svc.fleet.acquire = acquire;
    }
});
