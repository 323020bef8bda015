/**
 * The forwarder's pure parts (src/service/gateway/framing/emit.ts, forward-connect.ts, member-hop.ts,
 * proxy-auth.ts): which headers go on, what a member's CONNECT refusal becomes, how a member URL
 * becomes its hop, how the client's credentials are read.
 */
import { mock, test } from "node:test";
import assert from "node:assert/strict";
import { emitHead, hopByHop, parseRequestHead } from "../../src/service/gateway/framing";
import { relayedConnectStatus } from "../../src/service/gateway/forward-connect";
import { MemberHops } from "../../src/service/gateway/member-hop";
import { proxyCredentials } from "../../src/service/gateway/proxy-auth";

test("the relayed request head drops hop-by-hop lines and those named in Connection, and keeps the framing", () => {
    const head = parseRequestHead(
        Buffer.from(
            [
                "GET http://a.test/ HTTP/1.1",
                "Host: a.test",
                "Connection: keep-alive, X-Trace",
                "Keep-Alive: timeout=5",
                "Proxy-Authorization: Basic d2ViOnRvaw==",
                "Proxy-Connection: keep-alive",
                "TE: trailers",
                "Trailer: X-Sum",
                "Transfer-Encoding: chunked",
                "Upgrade: h2c",
                "x-trace: 1",
                "Accept: */*",
                "Cookie: a=1",
                "",
                "",
            ].join("\r\n"),
            "latin1",
        ),
    );
    assert.equal(
        emitHead(head, hopByHop(head), [["Proxy-Authorization", "Basic bTpw"]]).toString("latin1"),
        [
            "GET http://a.test/ HTTP/1.1",
            "Host: a.test",
            // A byte relay passes the chunked body on as it came: the line that says so goes with it.
            "Transfer-Encoding: chunked",
            "Accept: */*",
            "Cookie: a=1",
            "Proxy-Authorization: Basic bTpw",
            "",
            "",
        ].join("\r\n"),
    );
});

test("a member's non-200 CONNECT answer: relayed, except credentials refusals, proxy-chain's 59x and non-statuses (502)", () => {
    for (const s of [403, 404, 429, 500, 502, 503, 504]) assert.equal(relayedConnectStatus(s), s, String(s));
    for (const s of [401, 407, 590, 594, 595, 599, 100, 199, 600, 999])
        assert.equal(relayedConnectStatus(s), 502, String(s));
});

test("a member URL's hop: address (IPv6 unbracketed), its credentials as Basic, its own connections", () => {
    const hops = new MemberHops();
    const a = hops.of("http://us%40er:p%3Ass@127.0.0.1:3128");
    assert.equal(a.host, "127.0.0.1");
    assert.equal(a.port, 3128);
    assert.equal(a.authorization, `Basic ${Buffer.from("us@er:p:ss").toString("base64")}`);
    assert.equal(hops.of("http://us%40er:p%3Ass@127.0.0.1:3128"), a, "parsed once");
    const b = hops.of("http://[::1]:8080");
    assert.equal(b.host, "::1");
    assert.equal(b.authorization, undefined);
    assert.notEqual(b.conns, a.conns);
    hops.destroy();
});

test("hops unused for a sweep interval are dropped; used ones stay", () => {
    mock.timers.enable({ apis: ["setInterval"] });
    try {
        const hops = new MemberHops();
        const kept = hops.of("http://127.0.0.1:1");
        const gone = hops.of("http://127.0.0.1:2");
        mock.timers.tick(5 * 60_000); // both used in this interval
        hops.of("http://127.0.0.1:1");
        mock.timers.tick(5 * 60_000);
        assert.equal(hops.of("http://127.0.0.1:1"), kept);
        assert.notEqual(hops.of("http://127.0.0.1:2"), gone, "made again");
        hops.destroy();
    } finally {
        mock.timers.reset();
    }
});

test("Proxy-Authorization is read as before: Basic only, user:pass, no colon = all username, none = empty", () => {
    const basic = (s: string) => `Basic ${Buffer.from(s).toString("base64")}`;
    assert.deepEqual(proxyCredentials(basic("web_session_a:tok:en")), {
        ok: true,
        username: "web_session_a",
        password: "tok:en",
    });
    assert.deepEqual(proxyCredentials(basic("tokenonly")), { ok: true, username: "tokenonly", password: "" });
    assert.deepEqual(proxyCredentials(`basic ${Buffer.from("a:b").toString("base64")}`), {
        ok: true,
        username: "a",
        password: "b",
    });
    assert.deepEqual(proxyCredentials(undefined), { ok: true, username: "", password: "" });
    assert.deepEqual(proxyCredentials("  "), { ok: true, username: "", password: "" });
    for (const h of ["Bearer abc", "Basic", "Digest x=y"]) assert.equal(proxyCredentials(h).ok, false, h);
});
