/**
 * The rotating gateway (src/service/gateway), for real, with plain HTTP requests: a service with three
 * local proxies, its gateway on loopback and a loopback origin (test/helpers/gateway-service.ts). Every
 * request goes client → gateway → member → origin. CONNECT, and stopping the service with tunnels open:
 * gateway-connect.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { find } from "../helpers/metrics";
import { type TestService, TOKENS } from "../helpers/service";
import { basic, type GatewayService, LIMITED, withGatewayService } from "../helpers/gateway-service";

let svc: TestService;
let origin: GatewayService["origin"];
let closedPort = 0;
let hanging: GatewayService["hanging"];
const { o, viaGateway, slow, raw, samples, count, activeLeases, noLeases } = withGatewayService(
    (made) => ({ svc, origin, closedPort, hanging } = made),
);

test("rotation: consecutive requests go through the members in LRU order, each answer names its member", async () => {
    const okBefore = await count({ kind: "http", outcome: "ok" });
    const served: string[] = [];
    for (let i = 0; i < 6; i++) {
        const a = await viaGateway(o(`/page${i}`));
        assert.equal(a.status, 200);
        assert.equal(a.body, `origin /page${i}`);
        served.push(String(a.headers["x-egress-proxy"]));
    }
    assert.equal(new Set(served.slice(0, 3)).size, 3, `three members first: ${served}`);
    assert.deepEqual(served.slice(3), served.slice(0, 3), "then the same order again (least recently used first)");
    assert.equal(await count({ kind: "http", outcome: "ok" }), okBefore + 6);
    await noLeases();
});

test("outcomes: 403/429/marker → blocked (that member rests for the host), origin 500 → ok, the member's own failure → error", async () => {
    const before = {
        blocked: await count({ outcome: "blocked" }),
        error: await count({ outcome: "error" }),
        ok: await count({ outcome: "ok" }),
    };
    // Each through its own target so the rests do not overlap: the target option sets it.
    const blockedBy: Record<string, string> = {};
    for (const [p, target] of [
        ["/403", "t403.test"],
        ["/429", "t429.test"],
        ["/marker", "tmark.test"],
    ] as const) {
        const a = await viaGateway(o(p), basic(`web_target_${target}`, TOKENS.lease));
        assert.equal(a.status, p === "/marker" ? 200 : Number(p.slice(1)), p);
        blockedBy[target] = String(a.headers["x-egress-proxy"]);
    }
    const a500 = await viaGateway(o("/500"));
    assert.equal(a500.status, 500);
    const refused = await viaGateway(`http://127.0.0.1:${closedPort}/`);
    assert.ok(refused.status >= 590 && refused.status <= 599, `the member answers its own 59x: ${refused.status}`);
    await noLeases();
    assert.equal(await count({ outcome: "blocked" }), before.blocked + 3);
    assert.equal(await count({ outcome: "error" }), before.error + 1);
    assert.equal(await count({ outcome: "ok" }), before.ok + 1, "the origin's 500 is not the member's fault");
    // The member blocked for t403.test is skipped for it (it rests 60 s); the other two serve it, in turn.
    for (let i = 0; i < 4; i++) {
        const a = await viaGateway(o("/again"), basic("web_target_t403.test", TOKENS.lease));
        assert.equal(a.status, 200);
        assert.notEqual(
            a.headers["x-egress-proxy"],
            blockedBy["t403.test"],
            "the blocked member does not serve that target",
        );
    }
    // Other targets still get it.
    const seen = new Set<string>();
    for (let i = 0; i < 3; i++) seen.add(String((await viaGateway(o("/other"))).headers["x-egress-proxy"]));
    assert.ok(seen.has(blockedBy["t403.test"]), "a block is per target");
});

test("407 with Proxy-Authenticate for missing, wrong or under-scoped credentials; a token in the URL is not credentials", async () => {
    for (const auth of [
        null,
        basic("web", "not-a-token-0123456789"),
        basic("web", TOKENS.discover),
        basic("web", ""),
        "Basic " + Buffer.from(TOKENS.lease).toString("base64"),
    ]) {
        const a = await viaGateway(o("/x"), auth);
        assert.equal(a.status, 407, String(auth));
        assert.match(String(a.headers["proxy-authenticate"]), /^Basic realm="egress gateway"/);
        assert.equal(a.headers["content-type"], "application/json; charset=utf-8");
        const body = JSON.parse(a.body);
        assert.ok(["unauthenticated", "forbidden"].includes(body.error.code), a.body);
        assert.equal(a.headers["x-egress-error"], body.error.code);
    }
    assert.match(
        JSON.parse((await viaGateway(o("/x"), basic("web", TOKENS.discover))).body).error.message,
        /lacks the `lease` scope/,
    );
    // The origin URL's user part and query belong to the origin; they never authenticate at the gateway.
    const inUrl = await viaGateway(`http://web:${TOKENS.lease}@127.0.0.1:${origin.port}/x?token=${TOKENS.lease}`, null);
    assert.equal(inUrl.status, 407);
});

test("unknown pool → 404 unknown_pool; a malformed username → 400 naming the grammar; non-proxy requests → 400", async () => {
    const unknown = await viaGateway(o("/x"), basic("nope", TOKENS.lease));
    assert.equal(unknown.status, 404);
    assert.deepEqual(JSON.parse(unknown.body).error, { code: "unknown_pool", message: 'no pool named "nope"' });
    // Any other word is a label selector: one no member has is a 400 naming the labels there are.
    const unknownLabel = await viaGateway(o("/x"), basic("web_colour_red", TOKENS.lease));
    assert.equal(unknownLabel.status, 400);
    assert.equal(JSON.parse(unknownLabel.body).error.code, "unknown_label");
    assert.match(JSON.parse(unknownLabel.body).error.message, /no member of pool "web" has or had label "colour"/);
    const malformed = await viaGateway(o("/x"), basic("web_Colour_red", TOKENS.lease));
    assert.equal(malformed.status, 400);
    assert.match(
        JSON.parse(malformed.body).error.message,
        /option "Colour", which is no option.*expected <pool>\[_session_<key>\]\[_target_<host>\]/,
    );
    const originForm = await raw(
        `GET /v1/proxies HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic("web", TOKENS.lease)}\r\n\r\n`,
    );
    assert.match(originForm, /^HTTP\/1\.1 400 /);
    assert.match(originForm, /"code":"bad_request".*forward proxy/);
});

test("all members leased → 503 with Retry-After at once; a client that disconnects mid-stream releases its lease", async () => {
    const held = [await slow(), await slow(), await slow()];
    assert.equal((await activeLeases()).length, 3);
    const t0 = Date.now();
    const busy = await viaGateway(o("/x"));
    assert.ok(Date.now() - t0 < 2000, "answered at once, not after a wait");
    assert.equal(busy.status, 503);
    assert.ok(Number(busy.headers["retry-after"]) >= 1, `Retry-After: ${busy.headers["retry-after"]}`);
    assert.equal(JSON.parse(busy.body).error.code, "none_available");
    assert.ok((await count({ outcome: "unavailable" })) >= 1);
    // The clients go away in the middle of their downloads: every lease comes back, none as an error.
    const errorsBefore = await count({ outcome: "error" });
    for (const h of held) h.req.destroy();
    await noLeases();
    assert.equal(await count({ outcome: "error" }), errorsBefore, "a client leaving is not the member's fault");
    assert.equal(hanging.size, 0, "the members' connections to the origin were closed too");
    assert.equal((await viaGateway(o("/after"))).status, 200);
});

test("per-token concurrency: gatewayConcurrency 1 → the second request in flight gets 429 over_limit", async () => {
    const first = await slow(basic("web", LIMITED));
    const second = await viaGateway(o("/x"), basic("web", LIMITED));
    assert.equal(second.status, 429);
    assert.equal(second.headers["x-egress-error"], "over_limit");
    assert.match(JSON.parse(second.body).error.message, /limit \(gatewayConcurrency 1\)/);
    assert.equal((await viaGateway(o("/x"))).status, 200, "other tokens are not limited by it");
    first.req.destroy();
    await noLeases();
    assert.equal((await viaGateway(o("/x"), basic("web", LIMITED))).status, 200, "its slot came back");
});

test("metrics: upstream latency histogram and bytes per pool; tokens never in the logs", async () => {
    const s = await samples();
    const latency = find(s, "egress_gateway_upstream_latency_seconds_count", { pool: "web" });
    assert.equal(latency.length, 1);
    assert.ok(latency[0].value >= 6, `latency observed: ${latency[0].value}`);
    const sent = find(s, "egress_gateway_bytes_total", { pool: "web", direction: "sent" })[0]?.value ?? 0;
    const received = find(s, "egress_gateway_bytes_total", { pool: "web", direction: "received" })[0]?.value ?? 0;
    assert.ok(sent > 1000 && received > 1000, `bytes: sent ${sent}, received ${received}`);
    assert.ok(find(s, "egress_gateway_refusals_total", { reason: "unauthenticated" })[0].value >= 3);
    const logs = svc.logs.join("");
    assert.ok(logs.includes('"msg":"gateway request"'), "requests are logged at debug");
    for (const t of [TOKENS.lease, TOKENS.discover, LIMITED]) assert.ok(!logs.includes(t), "no token in the logs");
    for (const t of [TOKENS.lease, LIMITED])
        assert.ok(!logs.includes(Buffer.from(`web:${t}`).toString("base64")), "no credentials header in the logs");
});

test("docs/crawling.md's curl forms: credentials in the proxy URL, any pool, a session, CONNECT (-p)", async () => {
    const { execFile } = await import("node:child_process");
    const curl = (args: string[]) =>
        new Promise<string>((resolve, reject) =>
            execFile("curl", ["-s", "-i", "--max-time", "10", ...args], (e, out) => (e ? reject(e) : resolve(out))),
        );
    const gw = (user: string) => `http://${user}:${TOKENS.lease}@127.0.0.1:${svc.gatewayPort}`;
    for (const user of ["web", "", "web_session_cart42", "web_target_shop.example"]) {
        const out = await curl(["-x", gw(user), o("/curl")]);
        assert.match(out, /^HTTP\/1\.1 200 /, `user "${user}": ${out.slice(0, 200)}`);
        assert.match(out, /\r\nX-Egress-Proxy: web-\d\r\n/i);
        assert.ok(out.endsWith("origin /curl"));
    }
    const tunnelled = await curl(["-p", "-x", gw("web"), o("/tunnelled")]);
    assert.match(tunnelled, /^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 /, tunnelled.slice(0, 200));
    assert.ok(tunnelled.endsWith("origin /tunnelled"));
    assert.match(
        await curl(["-x", `http://web:wrong-token-0123456789@127.0.0.1:${svc.gatewayPort}`, o("/x")]),
        /^HTTP\/1\.1 407 /,
    );
    await noLeases();
});
