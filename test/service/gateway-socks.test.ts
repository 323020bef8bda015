/**
 * The gateway's SOCKS5 front door (`egress serve --socks-port`, src/service/gateway/socks.ts), for real:
 * `egress serve` on the local provider with two members, curl's SOCKS5 client (`--socks5-hostname`,
 * RFC 1929 login with the gateway's proxy username and token) to loopback origins, plain and HTTPS.
 * - a request through SOCKS5 is a gateway CONNECT: a lease granted and released `ok`, counted as
 *   `egress_gateway_requests_total{kind="connect"}`, its member recorded for POST /v1/blocks;
 * - refusals use RFC 1928/1929 codes: a bad token fails the login, an unknown pool is "not allowed by
 *   ruleset" (0x02), a target the members cannot reach "connection refused" (0x05, outcome `error`);
 * - hostile input on raw sockets (another version, no usable method, a bad command or address type, a
 *   truncated greeting, a handshake that never ends) closes cleanly, and the front keeps serving.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import * as net from "node:net";
import { find, parseSamples } from "../helpers/metrics";
import { freeLoopbackPort, listenLoopback } from "../helpers/net";
import {
    endProcProject,
    procProject,
    type ProcProject,
    serve,
    type ServeProcess,
    untilHealthy,
} from "../helpers/processes";
import { curl, httpsOrigin, testCa, type TestCa } from "../helpers/tls";
import { waitFor } from "../helpers/harness";

const LEASE = "tok-socks-lease-0123456789abcdef";
let p: ProcProject;
let svc: ServeProcess;
let socksPort: number;
let origin: Awaited<ReturnType<typeof listenLoopback>>;
let ca: TestCa;
let tlsOrigin: Awaited<ReturnType<typeof httpsOrigin>>;

before(async () => {
    origin = await listenLoopback(http.createServer((req, res) => res.end(`origin ${req.url}`)));
    ca = testCa();
    tlsOrigin = await httpsOrigin(ca.issue("origin"));
    p = procProject(
        "socks",
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [{ name: "web", provider: "local", replicas: 2, maxReplicas: 2 }],
        },
        { EGRESS_TOKENS: `admin:admin:tok-crash-admin-0123456789abcdef,crawler:lease:${LEASE}` },
    );
    socksPort = await freeLoopbackPort();
    svc = await serve(p, ["--socks-port", String(socksPort), "--gateway-wait", "0"]);
    await untilHealthy(svc, 2);
});
after(async () => {
    endProcProject(p);
    await origin?.close();
    await tlsOrigin?.close();
    ca?.cleanup();
});

const metric = async (name: string, labels: Record<string, string>) => {
    const text = await new Promise<string>((resolve, reject) =>
        http
            .get(`${svc.url}/metrics`, { agent: false }, (res) => {
                let t = "";
                res.setEncoding("utf8")
                    .on("data", (d) => (t += d))
                    .on("end", () => resolve(t));
            })
            .on("error", reject),
    );
    return find(parseSamples(text), name, labels).reduce((a, s) => a + s.value, 0);
};
const socks = (user: string, pass = LEASE) => ["--socks5-hostname", `${user}:${pass}@127.0.0.1:${socksPort}`];
const noLeases = async () => {
    for (let i = 0; i < 100; i++) {
        if ((await svc.call("GET", "/v1/leases")).body.leases.length === 0) return;
        await new Promise((r) => setTimeout(r, 50));
    }
    assert.fail("a lease is still open");
};

const login = (user: string, pass: string) =>
    Buffer.concat([Buffer.from([1, user.length]), Buffer.from(user), Buffer.from([pass.length]), Buffer.from(pass)]);
const GREETING = Buffer.from([5, 1, 2]);
const CHOSEN = Buffer.from([5, 2]);
const LOGGED_IN = Buffer.from([1, 0]);
const replyOf = (code: number) => Buffer.from([5, code, 0, 1, 0, 0, 0, 0, 0, 0]);

test("the ready line names the SOCKS5 front door, on loopback", () => {
    const ready = svc.entries.find((e) => e.msg === "egress service ready")!;
    assert.equal(ready.socks, `socks5h://127.0.0.1:${socksPort}`);
});

test("curl through SOCKS5: the origin answers, released ok and counted as a gateway CONNECT; its member is remembered", async () => {
    const labels = { pool: "web", kind: "connect", outcome: "ok" };
    const before = {
        requests: await metric("egress_gateway_requests_total", labels),
        attempts: await metric("egress_gateway_attempts_total", labels),
    };
    const r = await curl([...socks("web_session_s1"), `http://127.0.0.1:${origin.port}/hello`]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "origin /hello");
    await noLeases();
    assert.equal(await metric("egress_gateway_requests_total", labels), before.requests + 1);
    assert.equal(await metric("egress_gateway_attempts_total", labels), before.attempts + 1);
    // Its member is the one the gateway remembers for (token, pool, session, target): POST /v1/blocks finds it.
    const report = await svc.call("POST", "/v1/blocks", {
        body: { pool: "web", session: "s1", target: "127.0.0.1" },
        token: LEASE,
    });
    assert.equal(report.status, 200, JSON.stringify(report.body));
    assert.match(report.body.blocked.proxy, /^web-\d$/);
});

test("an open SOCKS5 tunnel holds one lease of the pool for its target; closing it releases the lease", async () => {
    const echo = net.createServer((c) => c.pipe(c));
    await new Promise<void>((r) => echo.listen(0, "127.0.0.1", r));
    const port = (echo.address() as net.AddressInfo).port;
    const s = net.connect(socksPort, "127.0.0.1");
    const got: Buffer[] = [];
    s.on("data", (d) => got.push(d));
    const request = Buffer.from([5, 1, 0, 1, 127, 0, 0, 1, port >> 8, port & 0xff]);
    for (const step of [GREETING, login("web", LEASE), request]) {
        s.write(step);
        await new Promise((r) => setTimeout(r, 50));
    }
    await waitFor("the 14 bytes of the handshake", () => Buffer.concat(got).length >= 14, 2_000, 20);
    assert.deepEqual(Buffer.concat(got), Buffer.concat([CHOSEN, LOGGED_IN, replyOf(0)]));
    const leases = (await svc.call("GET", "/v1/leases")).body.leases as { pool: string; target?: string }[];
    assert.equal(leases.length, 1);
    assert.equal(leases[0].pool, "web");
    s.write("ping");
    await waitFor('"ping" through the tunnel', () => Buffer.concat(got).subarray(14).toString() === "ping", 2_000, 20);
    s.end();
    await noLeases();
    await new Promise((r) => echo.close(r));
});

test("an HTTPS origin through SOCKS5: TLS end to end, the origin's certificate checked by curl", async () => {
    const r = await curl([...socks("web"), "--cacert", ca.caFile, `https://127.0.0.1:${tlsOrigin.port}/secure`]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "tls origin /secure");
    // A host name the member resolves (socks5h): curl sends "localhost", not an address.
    const byName = await curl([...socks("web"), "--cacert", ca.caFile, `https://localhost:${tlsOrigin.port}/n`]);
    assert.equal(byName.code, 0, byName.stderr);
    assert.equal(byName.stdout, "tls origin /n");
    await noLeases();
});

test("refusals use the RFCs' codes: a bad login or unknown pool fails RFC 1929's login, a protected target or unknown zone is 0x02, a target the member cannot reach 0x01 (outcome error)", async () => {
    const unauth = await metric("egress_gateway_refusals_total", { reason: "unauthenticated" });
    const badLogin = await curl([...socks("web", "tok-not-a-token-0123456789"), `http://127.0.0.1:${origin.port}/`]);
    assert.equal(badLogin.code, 97, badLogin.stderr); // CURLE_PROXY
    assert.match(badLogin.stderr, /User was rejected by the SOCKS5 server \(1 1\)/);
    assert.equal(await metric("egress_gateway_refusals_total", { reason: "unauthenticated" }), unauth + 1);

    const unknown = await curl([...socks("nosuchpool"), `http://127.0.0.1:${origin.port}/`]);
    assert.equal(unknown.code, 97, unknown.stderr);
    assert.match(unknown.stderr, /User was rejected by the SOCKS5 server/);

    // The service's own API is a protected target: "not allowed by ruleset".
    const forbidden = await curl([...socks("web"), `${svc.url}/v1/proxies`]);
    assert.equal(forbidden.code, 97, forbidden.stderr);
    assert.match(forbidden.stderr, /\(2\)/);
    const zone = await curl([...socks("web_zone_nowhere"), `http://127.0.0.1:${origin.port}/`]);
    assert.equal(zone.code, 97, zone.stderr);
    assert.match(zone.stderr, /\(2\)/);

    const errors = await metric("egress_gateway_requests_total", { pool: "web", kind: "connect", outcome: "error" });
    const closed = await freeLoopbackPort();
    const refused = await curl([...socks("web_retries_0"), `http://127.0.0.1:${closed}/`]);
    assert.equal(refused.code, 97, refused.stderr);
    // A local member (proxy-chain) closes a CONNECT it could not open without an answer, so the gateway
    // cannot tell a refused target from a failed member: "general failure". A member that says (proxy-chain's
    // 594, a 403) gets 0x05 or 0x02: test/unit/socks-protocol.test.ts.
    assert.match(refused.stderr, /\(1\)/);
    await noLeases();
    assert.equal(
        await metric("egress_gateway_requests_total", { pool: "web", kind: "connect", outcome: "error" }),
        errors + 1,
    );
});

/** Writes `bytes` on a fresh connection to the SOCKS5 port; everything the server sent until it closed, and how long that took. */
function exchange(steps: Buffer[], { waitMs = 0 } = {}): Promise<{ got: Buffer; ms: number }> {
    return new Promise((resolve, reject) => {
        const started = Date.now();
        const s = net.connect(socksPort, "127.0.0.1");
        const chunks: Buffer[] = [];
        s.on("data", (d) => chunks.push(d));
        // A flood is cut with unread bytes in the server's buffer: a reset is its clean close.
        s.on("error", (e: NodeJS.ErrnoException) => (e.code === "ECONNRESET" ? undefined : reject(e)));
        s.on("close", () => resolve({ got: Buffer.concat(chunks), ms: Date.now() - started }));
        s.once("connect", async () => {
            for (const step of steps) {
                if (s.destroyed) return;
                s.write(step);
                await new Promise((r) => setTimeout(r, 30));
            }
            if (waitMs === 0) return; // the server closes
            await new Promise((r) => setTimeout(r, waitMs));
            s.end();
        });
    });
}
test("hostile input closes cleanly with the RFCs' answers; the front keeps serving", { timeout: 60_000 }, async () => {
    // SOCKS4 (or anything not 5): closed with no answer.
    assert.deepEqual((await exchange([Buffer.from([4, 1, 0, 80, 127, 0, 0, 1, 0])])).got, Buffer.alloc(0));
    // An HTTP request on the SOCKS port: not version 5 either.
    assert.deepEqual((await exchange([Buffer.from("GET / HTTP/1.1\r\n\r\n")])).got, Buffer.alloc(0));
    // No username/password among the methods: "no acceptable methods".
    assert.deepEqual((await exchange([Buffer.from([5, 2, 0, 1])])).got, Buffer.from([5, 0xff]));
    // Zero methods.
    assert.deepEqual((await exchange([Buffer.from([5, 0])])).got, Buffer.alloc(0));
    // A login of another sub-negotiation version.
    assert.deepEqual((await exchange([GREETING, Buffer.from([2, 1, 97, 1, 98])])).got, CHOSEN);
    // BIND and UDP ASSOCIATE: "command not supported".
    for (const cmd of [2, 3]) {
        const r = await exchange([GREETING, login("web", LEASE), Buffer.from([5, cmd, 0, 1, 127, 0, 0, 1, 0, 80])]);
        assert.deepEqual(r.got, Buffer.concat([CHOSEN, LOGGED_IN, replyOf(7)]), `command ${cmd}`);
    }
    // An address type that does not exist: "address type not supported".
    const atyp = await exchange([GREETING, login("web", LEASE), Buffer.from([5, 1, 0, 9, 1, 2, 3, 4, 0, 80])]);
    assert.deepEqual(atyp.got, Buffer.concat([CHOSEN, LOGGED_IN, replyOf(8)]));
    // A domain name with bytes no host name has: "host unreachable", before any lease.
    const name = Buffer.concat([Buffer.from([5, 1, 0, 3, 5]), Buffer.from("a b\r\n"), Buffer.from([0, 80])]);
    assert.deepEqual(
        (await exchange([GREETING, login("web", LEASE), name])).got,
        Buffer.concat([CHOSEN, LOGGED_IN, replyOf(4)]),
    );
    // Truncated: half a greeting, half a login, half a request, each followed by the client leaving.
    for (const steps of [
        [Buffer.from([5])],
        [GREETING, Buffer.from([1, 200, 97])],
        [GREETING, login("web", LEASE), Buffer.from([5, 1, 0, 3, 50, 97])],
    ])
        assert.ok((await exchange(steps, { waitMs: 100 })).got.length <= 4);
    // Slowloris: a greeting byte, then nothing: the handshake's deadline (10 s) closes it.
    const timeouts = await metric("egress_gateway_refusals_total", { reason: "request_timeout" });
    const slow = await exchange([Buffer.from([5])]);
    assert.deepEqual(slow.got, Buffer.alloc(0));
    assert.ok(slow.ms >= 9_000 && slow.ms < 15_000, `closed after ${slow.ms} ms`);
    assert.equal(await metric("egress_gateway_refusals_total", { reason: "request_timeout" }), timeouts + 1);
    // A byte flood: at most one message's worth is read before it is refused.
    const flood = await exchange([Buffer.concat([GREETING, Buffer.from([1, 255]), Buffer.alloc(100_000, 0x61)])]);
    assert.ok(flood.got.length <= 4, `answered ${flood.got.length} bytes`);
    // Nothing leased, and the front still serves.
    await noLeases();
    const r = await curl([...socks("web"), `http://127.0.0.1:${origin.port}/after`]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "origin /after");
});
