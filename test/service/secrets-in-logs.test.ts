/**
 * A canary token, configured through EGRESS_TOKENS and therefore valid, is sent to every route in
 * every place a client might put it (a valid or malformed Authorization header, other credential
 * headers, the query, the body, a malformed body, a cookie); with debug logging on, no log line of the
 * service carries it. The service logs the token's name and scopes only.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startTestService, TestService } from "../helpers/service";

const CANARY = "canary-env-token-0d15ea5e-4b1d";
let svc: TestService;
before(async () => {
    const saved = process.env.EGRESS_TOKENS;
    process.env.EGRESS_TOKENS = `canary:discover+lease+scale:${CANARY}`;
    try {
        svc = await startTestService({ "egress:providers": { local: { type: "local" } }, "egress:pools": [{ name: "web", provider: "local", replicas: 0, maxReplicas: 2 }] }, { converge: false });
    } finally {
        if (saved === undefined) delete process.env.EGRESS_TOKENS;
        else process.env.EGRESS_TOKENS = saved;
    }
});
after(async () => {
    await svc?.close();
});

const routes: [string, string, unknown?][] = [
    ["GET", "/v1/proxies"], ["GET", "/v1/pools"], ["PUT", "/v1/pools/web/replicas", { replicas: 0 }], ["PUT", "/v1/pools/nope/replicas", { replicas: 1 }],
    ["GET", "/v1/operations"], ["GET", "/v1/operations/op_none"], ["GET", "/v1/providers/health"],
    ["POST", "/v1/leases", {}], ["POST", "/v1/leases", { pool: "web" }], ["POST", "/v1/leases/abc/release", { outcome: "ok" }],
    ["GET", "/v1/echo"], ["GET", "/healthz"], ["GET", "/readyz"], ["GET", "/metrics"], ["GET", "/v1/openapi.json"], ["GET", "/nope"],
];

test("the canary token is valid (so the requests below exercise the authenticated paths too)", async () => {
    const r = await svc.call("GET", "/v1/proxies", { token: CANARY });
    assert.equal(r.status, 200, JSON.stringify(r.body));
});

test("sent everywhere on every route, the canary reaches no log line", async () => {
    const ways: { name: string; token?: string | null; headers?: Record<string, string>; query?: string; body?: (b: unknown) => unknown; raw?: string }[] = [
        { name: "valid bearer", token: CANARY },
        { name: "malformed authorization", token: null, headers: { authorization: `Basic ${CANARY}` } },
        { name: "bearer with junk", token: null, headers: { authorization: `Bearer ${CANARY} extra` } },
        { name: "other credential headers", token: CANARY, headers: { "x-api-key": CANARY, "proxy-authorization": `Bearer ${CANARY}`, cookie: `session=${CANARY}`, "x-auth-token": CANARY } },
        { name: "query", token: null, query: `token=${CANARY}` },
        { name: "query with a valid header", token: CANARY, query: `access_token=${CANARY}` },
        { name: "body fields", token: CANARY, body: (b) => ({ ...(b as object), token: CANARY, password: CANARY, nested: { deep: { privateKey: CANARY } } }) },
        { name: "malformed body quoting the canary", token: CANARY, raw: `{"token": "${CANARY}"` },
    ];
    let sent = 0;
    for (const [method, route, body] of routes)
        for (const w of ways) {
            if ((w.body || w.raw !== undefined) && body === undefined) continue; // GET: no body to put it in
            const url = w.query ? `${route}${route.includes("?") ? "&" : "?"}${w.query}` : route;
            const r = await svc.call(method, url, { token: w.token, headers: w.headers, body: w.raw !== undefined ? undefined : w.body ? w.body(body) : body, raw: w.raw });
            assert.ok(r.status > 0);
            sent++;
        }
    assert.ok(sent > 100, `sent ${sent} requests`);
    await new Promise((r) => setTimeout(r, 200));
    const lines = svc.logs;
    assert.ok(lines.length > 50, `requests were logged (${lines.length} lines at debug)`);
    const leaked = lines.filter((l) => l.includes(CANARY));
    assert.deepEqual(leaked, [], "no log line carries the canary");
});

test("the service logs the token's name and scopes, not the token", () => {
    const loaded = svc.logs.map((l) => JSON.parse(l)).find((l) => l.msg === "loaded API tokens");
    assert.ok(loaded, "the token list is logged at start");
    assert.deepEqual(loaded.tokens.find((t: any) => t.name === "canary"), { name: "canary", scopes: ["discover", "lease", "scale"] });
});
