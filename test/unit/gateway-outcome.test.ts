/** How a gateway request's end maps to a lease release outcome (src/service/gateway/outcome.ts). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { DEFAULT_BLOCK_RULES, httpOutcome, isMemberError, tunnelOutcome } from "../../src/service/gateway/outcome";

const rules = { statuses: [403, 429], headers: [{ name: "cf-mitigated" }, { name: "server", contains: "DDoS-Guard" }] };
const end = (
    status: number | undefined,
    rawHeaders: string[] = [],
    more: { complete?: boolean; clientGone?: boolean } = {},
) => httpOutcome({ status, rawHeaders, complete: more.complete ?? true, clientGone: more.clientGone ?? false }, rules);

test("origin answers: 2xx–4xx ok, 403/429 blocked, an origin's 5xx is ok for the member", () => {
    for (const s of [200, 204, 301, 304, 400, 404, 410]) assert.equal(end(s), "ok", String(s));
    assert.equal(end(403), "blocked");
    assert.equal(end(429), "blocked");
    for (const s of [500, 502, 503, 504]) assert.equal(end(s, ["Content-Type", "text/html"]), "ok", `origin ${s}`);
});

test("block markers: a header's presence, or its value containing a text (case-insensitive)", () => {
    assert.equal(end(200, ["CF-Mitigated", "challenge"]), "blocked");
    assert.equal(end(200, ["Server", "ddos-guard"]), "blocked");
    assert.equal(end(200, ["Server", "nginx"]), "ok");
    assert.equal(
        httpOutcome(
            { status: 200, rawHeaders: ["cf-mitigated", "x"], complete: true, clientGone: false },
            DEFAULT_BLOCK_RULES,
        ),
        "ok",
        "no markers by default",
    );
});

test("the member's own errors: proxy-chain's 59x, squid's X-Squid-Error, no answer, a cut-off answer", () => {
    for (const s of [590, 594, 595, 597, 599]) assert.equal(end(s), "error", String(s));
    assert.equal(end(503, ["X-Squid-Error", "ERR_CONNECT_FAIL 111"]), "error");
    assert.equal(
        end(403, ["X-Squid-Error", "ERR_ACCESS_DENIED 0"]),
        "error",
        "squid's own 403 is the member refusing, not the origin",
    );
    assert.equal(end(undefined), "error", "no answer from the member");
    assert.equal(end(200, [], { complete: false }), "error", "the member broke off mid-answer");
    assert.equal(isMemberError(200, ["X-Squid-Error", "x"]), false, "a success is never the member's error");
});

test("a client that goes away is not the member's fault", () => {
    assert.equal(end(undefined, [], { complete: false, clientGone: true }), "ok");
    assert.equal(end(200, [], { complete: false, clientGone: true }), "ok");
    assert.equal(
        end(429, [], { complete: false, clientGone: true }),
        "blocked",
        "a block seen before the client left still counts",
    );
});

test("tunnels: only whether the member opened it", () => {
    assert.equal(tunnelOutcome({ member: "open", clientGone: false }), "ok");
    assert.equal(tunnelOutcome({ member: "open", clientGone: true }), "ok");
    assert.equal(tunnelOutcome({ member: "refused", clientGone: false }), "error");
    assert.equal(tunnelOutcome({ member: "none", clientGone: false }), "error");
    assert.equal(tunnelOutcome({ member: "none", clientGone: true }), "ok");
});
