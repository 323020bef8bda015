/**
 * Credentials are never accepted in the URL: a request with a query parameter named like one is
 * answered 400 token_in_url on every route and both lease paths, even carrying a valid token (which is
 * not used), and the value shows up in no log line (the logged URL has it replaced).
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { EMPTY_LOCAL_POOL, startTestService, TestService, TOKENS } from "../helpers/service";
import { teardown } from "../helpers/harness";

let svc: TestService;
const cleanup = teardown();
before(async () => {
    svc = await startTestService(EMPTY_LOCAL_POOL, { converge: false });
    cleanup.own(svc);
});

const CANARY = "canary-url-secret-5d1c9e";
const cases: { method: string; route: string; param: string; body?: unknown; header?: boolean }[] = [
    { method: "GET", route: "/v1/proxies", param: "token" },
    { method: "GET", route: "/v1/proxies?pool=web", param: "Access_Token" },
    { method: "POST", route: "/v1/leases", param: "api_key", body: {} },
    { method: "POST", route: "/v1/leases", param: "token", body: {}, header: false },
    { method: "POST", route: "/v1/leases/abc/release", param: "key", body: { outcome: "ok" } },
    { method: "PUT", route: "/v1/pools/web/replicas", param: "PASSWORD", body: { replicas: 1 } },
    { method: "GET", route: "/v1/operations", param: "client_secret" },
    { method: "GET", route: "/v1/echo", param: "x-auth-token" },
    { method: "GET", route: "/healthz", param: "secret" },
    { method: "GET", route: "/v1/openapi.json", param: "%74oken" }, // percent-encoded "token"
    { method: "GET", route: "/v1/proxies", param: "token[]" },
];

for (const c of cases) {
    const sep = c.route.includes("?") ? "&" : "?";
    const url = `${c.route}${sep}${c.param}=${CANARY}`;
    test(`${c.method} ${url} → 400 token_in_url`, async () => {
        const r = await svc.call(c.method, url, { body: c.body, token: c.header === false ? null : TOKENS.admin });
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.equal(r.body.error.code, "token_in_url");
        assert.match(r.body.error.message, /Authorization: Bearer <token>/);
        assert.ok(!JSON.stringify(r.body).includes(CANARY), "the answer does not echo the value");
    });
}

test("a valid token in the query is not used: the scale request starts no operation", async () => {
    const r = await svc.call("PUT", `/v1/pools/web/replicas?token=${TOKENS.admin}`, {
        token: null,
        body: { replicas: 1 },
    });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, "token_in_url");
    assert.deepEqual((await svc.call("GET", "/v1/operations")).body.operations, []);
});

test("ordinary query parameters still work", async () => {
    const r = await svc.call("GET", "/v1/proxies?pool=web&state=healthy", { token: TOKENS.discover });
    assert.equal(r.status, 200, JSON.stringify(r.body));
});

test("the values reach no log line; the logged URL carries [redacted]", async () => {
    await new Promise((r) => setTimeout(r, 100));
    const all = svc.logs.join("");
    assert.ok(!all.includes(CANARY), "a query credential leaked into the logs");
    assert.ok(!all.includes(TOKENS.admin), "a token leaked into the logs");
    const lines = svc.logs.map((l) => JSON.parse(l)).filter((l) => l.error === "token_in_url");
    assert.equal(lines.length, cases.length + 1, "every rejection is logged");
    for (const l of lines) {
        assert.equal(l.level, 30);
        assert.match(l.req.url, /=\[redacted\]/);
        assert.equal(l.req.query, undefined);
    }
});
