/**
 * The gateway's doors (issue 36) over real HTTP, real local members, no mocks: an allowed source needs
 * no credentials (plain requests and CONNECT), yet credentials it sends still win; a sticky port is one
 * session whoever's credentials come through it. The gateway listens on `::ffff:127.0.0.1`, so its
 * clients really arrive as IPv4-mapped IPv6 addresses, and the rule names plain `127.0.0.1/32`.
 * The browser's view is test/ui/gateway-doors.test.ts.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import { connectViaProxy, freePortRange, listenLoopback, viaProxy } from "../helpers/net";
import { settledConverge, startTestService, type TestService, TOKENS, waitHealthy } from "../helpers/service";
import { basic } from "../helpers/gateway-service";
import { parseAllowRule, parseStickyRange } from "../../src/service/gateway/doors";
import { teardown } from "../helpers/harness";

let svc: TestService;
let origin: Awaited<ReturnType<typeof listenLoopback>>;
let sticky: number;

const cleanup = teardown();
before(async () => {
    origin = await listenLoopback(http.createServer((req, res) => res.end(`origin ${req.url}`)));
    cleanup.own(origin);
    sticky = await freePortRange(2);
    svc = await startTestService(
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [
                { name: "web", provider: "local", replicas: 2, maxReplicas: 2, gateway: { memberConcurrency: 4 } },
            ],
        },
        {
            targetCooldownSeconds: 0,
            gateway: {
                port: 0,
                // An IPv6 socket on a v4-mapped address: IPv4 clients arrive as ::ffff:127.0.0.1.
                host: "::ffff:127.0.0.1",
                waitMs: 0,
                allow: [parseAllowRule("127.0.0.1/32=lease:web")],
                stickyPorts: [parseStickyRange(`${sticky}-${sticky + 1}:web`)],
            },
        },
    );
    cleanup.own(svc);
    await settledConverge(svc);
    await waitHealthy(svc, 2);
});

const url = (p: string) => `${origin.url}${p}`;

test("an allowed source (seen as ::ffff:127.0.0.1) needs no credentials: plain requests and CONNECT", async () => {
    const plain = await viaProxy(svc.gatewayPort!, url("/free"), null);
    assert.equal(plain.status, 200, plain.body);
    assert.equal(plain.body, "origin /free");
    assert.match(String(plain.headers["x-egress-proxy"]), /^web-[01]$/);
    const tunnel = await connectViaProxy(svc.gatewayPort!, origin.port, "/tunnel");
    assert.equal(tunnel.connectStatus, 200);
    assert.equal(tunnel.body, "origin /tunnel");
});

test("credentials an allowed source sends still win: a wrong token is a 407, a username's options apply", async () => {
    const wrong = await viaProxy(svc.gatewayPort!, url("/wrong"), basic("web", "not-a-token-0123456789"));
    assert.equal(wrong.status, 407, wrong.body);
    assert.match(String(wrong.headers["proxy-authenticate"]), /^Basic realm="egress gateway"/);
    // The username alone (no token) from an allowed source: its options with the rule's token.
    const first = await viaProxy(svc.gatewayPort!, url("/s1"), basic("web_session_s1", ""));
    const again = await viaProxy(svc.gatewayPort!, url("/s2"), basic("web_session_s1", ""));
    assert.equal(first.status, 200, first.body);
    assert.equal(again.headers["x-egress-proxy"], first.headers["x-egress-proxy"], "one session, one member");
    const bad = await viaProxy(svc.gatewayPort!, url("/bad"), basic("web_zone_mars", ""));
    assert.equal(bad.status, 400, bad.body);
    // A good token of another name is that token (admin), not the rule's.
    const admin = await viaProxy(svc.gatewayPort!, url("/admin"), basic("web", TOKENS.admin));
    assert.equal(admin.status, 200, admin.body);
});

test("a sticky port is one session: the same member for each request, another port has its own", async () => {
    const members = async (port: number, auth: string | null) => {
        const seen: string[] = [];
        for (let i = 0; i < 4; i++) {
            const r = await viaProxy(port, url(`/p${port}-${i}`), auth);
            assert.equal(r.status, 200, r.body);
            seen.push(String(r.headers["x-egress-proxy"]));
        }
        return seen;
    };
    const a = await members(sticky, null);
    const b = await members(sticky + 1, basic("", TOKENS.admin)); // with credentials: still the port's session
    assert.equal(new Set(a).size, 1, a.join());
    assert.equal(new Set(b).size, 1, b.join());
    assert.notEqual(a[0], b[0], "two sessions on a pool of two: two members");
    // The sessions are the ports' (`port-<n>`) and the requests the tokens': each may report its own.
    const report = (session: string, token: string) =>
        svc.call("POST", "/v1/blocks", { token, body: { pool: "web", target: "127.0.0.1", session } });
    assert.equal((await report(`port-${sticky}`, TOKENS.lease)).status, 200);
    assert.equal((await report(`port-${sticky + 1}`, TOKENS.admin)).status, 200);
    assert.equal((await report(`port-${sticky + 1}`, TOKENS.lease)).status, 404);
});
