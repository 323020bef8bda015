/**
 * The rotating gateway (src/service/gateway), for real, with CONNECT: a service with three local proxies,
 * its gateway on loopback, a loopback origin and a loopback TCP echo server as the tunnels' target
 * (test/helpers/gateway-service.ts). Its last test stops the service with a tunnel and an answer open.
 * Plain HTTP requests: gateway.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { type TestService, TOKENS } from "../helpers/service";
import { basic, withGatewayService } from "../helpers/gateway-service";

let svc: TestService;
const { o, viaGateway, slow, raw, tunnel, count, activeLeases, noLeases } = withGatewayService(
    (made) => ({ svc } = made),
);

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
                ? /"code":"bad_request","message":"not an HTTP request the gateway can read \(invalid_start_line: /
                : /"code":"bad_request","message":"CONNECT needs host:port/,
            target,
        );
    }
    assert.equal((await activeLeases()).length, 0);
});

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
    // Naming the member (the answer's X-Egress-Proxy): one that did not serve the session is refused by name.
    const named = await svc.call("POST", "/v1/blocks", {
        token: TOKENS.lease,
        body: { pool: "web", target: "shop.test", session: "s1", proxy: "web-99" },
    });
    assert.equal(named.status, 404);
    assert.match(named.body.error.message, /through web-99/);
    const same = await svc.call("POST", "/v1/blocks", {
        token: TOKENS.lease,
        body: { pool: "web", target: "shop.test", session: "s1", proxy: benched },
    });
    assert.equal(same.body.blocked?.proxy, benched, JSON.stringify(same.body));
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
