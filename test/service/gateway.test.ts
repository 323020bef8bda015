/**
 * The rotating gateway (src/service/gateway), for real: a service with three local proxies, its gateway
 * on loopback, a loopback origin that answers 200/403/429/500, a block-marker header and a slow stream,
 * and a loopback TCP echo server as a CONNECT target. Every request goes client → gateway → member → origin.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { listenLoopback, type ProxiedAnswer, viaProxy } from "../helpers/net";
import { find, parseSamples } from "../helpers/metrics";
import { settledConverge, startTestService, TestService, TOKENS, waitFor } from "../helpers/service";
import { sha256 } from "../../src/service/http/auth";

const LIMITED = "tok-limited-0123456789abcdef";
let svc: TestService;
let origin: Awaited<ReturnType<typeof listenLoopback>>;
let echo: net.Server;
let echoPort = 0;
let closedPort = 0;
const hanging = new Set<http.ServerResponse>();

before(async () => {
    origin = await listenLoopback(
        http.createServer((req, res) => {
            const p = new URL(req.url!, "http://x").pathname;
            if (p === "/slow") {
                // A head and one chunk, then nothing until the test lets go: a download in progress.
                res.writeHead(200, { "content-type": "text/plain" });
                res.write("first chunk\n");
                hanging.add(res);
                res.once("close", () => hanging.delete(res));
                return;
            }
            const status = /^\/(\d{3})$/.exec(p)?.[1];
            const headers: Record<string, string> = { "content-type": "text/plain" };
            if (p === "/marker") headers["x-blocked-by"] = "a CDN challenge";
            res.writeHead(status ? Number(status) : 200, headers);
            res.end(`origin ${p}`);
        }),
    );
    echo = net.createServer((s) => s.pipe(s));
    await new Promise<void>((r) => echo.listen(0, "127.0.0.1", r));
    echoPort = (echo.address() as net.AddressInfo).port;
    // A port nothing listens on: the members' connections to it are refused.
    const tmp = net.createServer();
    await new Promise<void>((r) => tmp.listen(0, "127.0.0.1", r));
    closedPort = (tmp.address() as net.AddressInfo).port;
    await new Promise((r) => tmp.close(r));

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-gw-tokens-"));
    const tokensFile = path.join(dir, "tokens.json");
    const scopes: Record<string, string[]> = {
        admin: ["admin"],
        discover: ["discover"],
        lease: ["lease"],
        scale: ["scale"],
    };
    fs.writeFileSync(
        tokensFile,
        JSON.stringify({
            tokens: [
                ...Object.entries(TOKENS).map(([name, t]) => ({
                    name,
                    sha256: sha256(t).toString("hex"),
                    scopes: scopes[name],
                })),
                { name: "limited", sha256: sha256(LIMITED).toString("hex"), scopes: ["lease"], gatewayConcurrency: 1 },
            ],
        }),
    );
    svc = await startTestService(
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [{ name: "web", provider: "local", replicas: 3, maxReplicas: 3 }],
        },
        {
            tokensFile,
            targetCooldownSeconds: 0,
            // waitMs 0: these tests check the answers at once (the wait is test/service/gateway-one-site.test.ts's).
            gateway: { port: 0, waitMs: 0, blockRules: { statuses: [403, 429], headers: [{ name: "x-blocked-by" }] } },
        },
    );
    await settledConverge(svc);
    await waitFor(
        "3 healthy",
        async () => (await svc.call("GET", "/v1/proxies?state=healthy")).body.proxies.length === 3,
        30_000,
    );
});

after(async () => {
    for (const r of hanging) r.destroy();
    await svc?.close();
    await origin?.close();
    await new Promise((r) => echo?.close(r));
});

const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;
const o = (p: string) => `http://127.0.0.1:${origin.port}${p}`;

type Answer = ProxiedAnswer;

/** One request through the gateway (absolute-form), on its own connection. */
function viaGateway(url: string, auth: string | null = basic("web", TOKENS.lease), method = "GET"): Promise<Answer> {
    return viaProxy(svc.gatewayPort!, url, auth, method);
}

/** Opens a request whose answer never ends (/slow); resolves once its first chunk arrived. */
function slow(auth = basic("web", TOKENS.lease)): Promise<{ res: http.IncomingMessage; req: http.ClientRequest }> {
    return new Promise((resolve, reject) => {
        const req = http.request(
            {
                host: "127.0.0.1",
                port: svc.gatewayPort,
                path: o("/slow"),
                headers: { "proxy-authorization": auth },
                agent: false,
            },
            (res) => {
                if (res.statusCode !== 200) return reject(new Error(`slow: ${res.statusCode}`));
                res.once("data", () => resolve({ res, req }));
            },
        );
        req.on("error", () => undefined).end();
    });
}

/** A raw request line (and headers) on a fresh socket; the whole answer as text. */
function raw(text: string): Promise<string> {
    return new Promise((resolve, reject) => {
        const s = net.connect(svc.gatewayPort!, "127.0.0.1", () => s.write(text));
        let got = "";
        s.setEncoding("utf8")
            .on("data", (d) => (got += d))
            .on("end", () => resolve(got))
            .on("error", reject);
    });
}

const samples = async () => parseSamples(String((await svc.call("GET", "/metrics", { token: null })).body));
const count = async (labels: Record<string, string>) =>
    find(await samples(), "egress_gateway_requests_total", { pool: "web", ...labels }).reduce((a, s) => a + s.value, 0);
const activeLeases = async () => (await svc.call("GET", "/v1/leases")).body.leases as unknown[];
const noLeases = () => waitFor("no active leases", async () => (await activeLeases()).length === 0, 10_000, 50);

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
    const malformed = await viaGateway(o("/x"), basic("web_colour_red", TOKENS.lease));
    assert.equal(malformed.status, 400);
    assert.match(
        JSON.parse(malformed.body).error.message,
        /unknown option "colour".*expected <pool>\[_session_<key>\]\[_target_<host>\]/,
    );
    const originForm = await raw(
        `GET /v1/proxies HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic("web", TOKENS.lease)}\r\n\r\n`,
    );
    assert.match(originForm, /^HTTP\/1\.1 400 /);
    assert.match(originForm, /"code":"bad_request".*forward proxy/);
});

test("400 for a malformed CONNECT target, before any lease", async () => {
    for (const target of ["nohostport", "host:", "host:0", "host:99999", ":443", "a b:80", "host:80:90"]) {
        const answer = await raw(
            `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: ${basic("web", TOKENS.lease)}\r\n\r\n`,
        );
        assert.match(answer, /^HTTP\/1\.1 400 Bad Request\r\n/, target);
        assert.match(answer, /\r\ncontent-type: application\/json; charset=utf-8\r\n/i, target);
        assert.match(
            answer,
            target === "a b:80"
                ? /"code":"bad_request","message":"not an HTTP request the gateway can read \(HPE_/
                : /"code":"bad_request","message":"CONNECT needs host:port/,
            target,
        );
    }
    assert.equal((await activeLeases()).length, 0);
});

/** A CONNECT tunnel to the echo server; resolves with the socket once the gateway answered 200. */
function tunnel(user: string): Promise<{ status: number; socket: net.Socket }> {
    return new Promise((resolve, reject) => {
        const req = http.request({
            host: "127.0.0.1",
            port: svc.gatewayPort,
            method: "CONNECT",
            path: `127.0.0.1:${echoPort}`,
            headers: { "proxy-authorization": basic(user, TOKENS.lease) },
            agent: false,
        });
        req.on("connect", (res, socket) => resolve({ status: res.statusCode!, socket }));
        req.on("error", reject).end();
    });
}

test("CONNECT: a tunnel through a member; closing it releases the lease with ok; POST /v1/blocks benches its member", async () => {
    const okBefore = await count({ kind: "connect", outcome: "ok" });
    const t = await tunnel("web_session_s1_target_shop.test");
    assert.equal(t.status, 200);
    assert.equal((await activeLeases()).length, 1, "the tunnel holds a lease");
    const echoed = await new Promise<string>((r) => {
        t.socket.once("data", (d) => r(String(d)));
        t.socket.write("ping through the tunnel");
    });
    assert.equal(echoed, "ping through the tunnel");
    t.socket.end();
    await noLeases();
    assert.equal(await count({ kind: "connect", outcome: "ok" }), okBefore + 1);
    // The client saw a block inside TLS: it reports it; the member that served the session rests for the target.
    const report = await svc.call("POST", "/v1/blocks", {
        token: TOKENS.lease,
        body: { pool: "web", target: "shop.test", session: "s1" },
    });
    assert.equal(report.status, 200, JSON.stringify(report.body));
    const benched = report.body.blocked.proxy as string;
    assert.match(benched, /^web-\d$/);
    assert.ok(Date.parse(report.body.blocked.until) - Date.now() > 50_000, "the blocked cooldown (60 s)");
    for (let i = 0; i < 3; i++) {
        const a = await viaGateway(o("/y"), basic("web_target_shop.test", TOKENS.lease));
        assert.notEqual(a.headers["x-egress-proxy"], benched);
    }
    // Only what this token was served: another token, or another session, has nothing to report.
    const other = await svc.call("POST", "/v1/blocks", {
        token: TOKENS.admin,
        body: { pool: "web", target: "shop.test", session: "s1" },
    });
    assert.equal(other.status, 404);
    assert.equal(other.body.error.code, "not_served");
    const bad = await svc.call("POST", "/v1/blocks", { token: TOKENS.lease, body: { pool: "web" } });
    assert.equal(bad.status, 400);
    assert.equal(
        (await svc.call("POST", "/v1/blocks", { token: TOKENS.discover, body: { pool: "web", target: "x" } })).status,
        403,
    );
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

test(
    "stopping the service: open answers and tunnels get the grace, then are cut, and their leases come back (last: it stops the service)",
    { timeout: 30_000 },
    async () => {
        const download = await slow();
        const t = await tunnel("web");
        assert.equal(t.status, 200);
        assert.equal(svc.fleet.activeLeases().length, 2);
        const closedDownload = new Promise<void>((r) => download.res.socket.once("close", () => r()));
        const closedTunnel = new Promise<void>((r) => t.socket.once("close", () => r()));
        t.socket.on("error", () => undefined);
        const t0 = Date.now();
        await svc.stop();
        await Promise.all([closedDownload, closedTunnel]);
        assert.ok(Date.now() - t0 < 10_000, `stopped in ${Date.now() - t0} ms`);
        assert.deepEqual(svc.fleet.activeLeases(), [], "every lease was released");
        await assert.rejects(viaGateway(o("/x")), /ECONNREFUSED/, "the gateway no longer listens");
    },
);
