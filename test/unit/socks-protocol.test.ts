/**
 * SOCKS5's messages as the gateway reads them (src/service/gateway/socks-protocol.ts) and the reply
 * codes its refusals and failed tunnels get (socks.ts): exact bytes and codes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readAuth, readGreeting, readRequest, reply, REPLY } from "../../src/service/gateway/socks-protocol";
import { refusalReply, tunnelReply } from "../../src/service/gateway/socks";
import type { TunnelFailure } from "../../src/service/gateway/forward-connect";

const b = (...bytes: number[]) => Buffer.from(bytes);

test("greeting: incomplete, wrong version, no methods, and whole", () => {
    assert.equal(readGreeting(b()), undefined);
    assert.equal(readGreeting(b(5)), undefined);
    assert.equal(readGreeting(b(5, 2, 0)), undefined);
    assert.deepEqual(readGreeting(b(4, 1, 0)), { ok: false, why: "not SOCKS version 5 (first byte 4)" });
    assert.deepEqual(readGreeting(b(5, 0)), { ok: false, why: "a greeting with no methods" });
    assert.deepEqual(readGreeting(b(5, 2, 0, 2, 9)), { ok: true, used: 4, methods: [0, 2] });
});

test("RFC 1929 login: incomplete at every byte, wrong version, and whole (an empty username is any pool)", () => {
    const whole = Buffer.concat([b(1, 3), Buffer.from("web"), b(4), Buffer.from("tokn")]);
    for (let n = 0; n < whole.length; n++) assert.equal(readAuth(whole.subarray(0, n)), undefined, `${n} bytes`);
    assert.deepEqual(readAuth(whole), { ok: true, used: whole.length, username: "web", password: "tokn" });
    assert.deepEqual(readAuth(b(1, 0, 1, 0x41)), { ok: true, used: 4, username: "", password: "A" });
    assert.deepEqual(readAuth(b(5, 1, 2)), { ok: false, why: "not username/password version 1 (first byte 5)" });
});

test("request: IPv4, IPv6 and names as a CONNECT names them; the RFC's codes for what is not served", () => {
    assert.deepEqual(readRequest(b(5, 1, 0, 1, 10, 0, 0, 7, 0x01, 0xbb)), {
        ok: true,
        used: 10,
        host: "10.0.0.7",
        port: 443,
    });
    const v6 = b(5, 1, 0, 4, ...Array(15).fill(0), 1, 0, 80);
    assert.deepEqual(readRequest(v6), { ok: true, used: 22, host: "[::1]", port: 80 });
    const name = Buffer.concat([b(5, 1, 0, 3, 11), Buffer.from("example.org"), b(0, 80)]);
    for (let n = 0; n < name.length; n++) assert.equal(readRequest(name.subarray(0, n)), undefined, `${n} bytes`);
    assert.deepEqual(readRequest(name), { ok: true, used: name.length, host: "example.org", port: 80 });
    assert.equal((readRequest(b(5, 2, 0, 1, 1, 2, 3, 4, 0, 80)) as { reply: number }).reply, 7);
    assert.equal((readRequest(b(5, 3, 0, 1, 1, 2, 3, 4, 0, 80)) as { reply: number }).reply, 7);
    assert.equal((readRequest(b(5, 1, 0, 2, 1, 2, 3, 4, 0, 80)) as { reply: number }).reply, 8);
    assert.equal((readRequest(b(5, 1, 0, 1, 1, 2, 3, 4, 0, 0)) as { reply: number }).reply, 2);
    const bad = Buffer.concat([b(5, 1, 0, 3, 3), Buffer.from("a:b"), b(0, 80)]);
    assert.equal((readRequest(bad) as { reply: number }).reply, 4);
    assert.deepEqual(reply(REPLY.connectionRefused), b(5, 5, 0, 1, 0, 0, 0, 0, 0, 0));
});

test("refusals: a rule said no is 0x02; nothing could serve it is 0x01", () => {
    for (const code of ["unauthenticated", "forbidden", "bad_username", "unknown_pool", "unknown_zone"] as const)
        assert.equal(refusalReply(code), REPLY.notAllowed, code);
    for (const code of ["over_limit", "forbidden_target", "target_busy"] as const)
        assert.equal(refusalReply(code), REPLY.notAllowed, code);
    for (const code of ["not_ready", "none_available", "store_unavailable", "bad_request"] as const)
        assert.equal(refusalReply(code), REPLY.generalFailure, code);
});

test("failed tunnels: what the member answered decides the code", () => {
    const why = (memberStatus?: number): TunnelFailure => ({
        memberId: "web-0",
        attempt: 1,
        failure: { code: "member_unreachable", type: "destination_unavailable", details: "x" },
        memberStatus,
    });
    assert.equal(tunnelReply(why(403)), REPLY.notAllowed);
    assert.equal(tunnelReply(why(594)), REPLY.connectionRefused);
    assert.equal(tunnelReply(why(593)), REPLY.hostUnreachable);
    assert.equal(tunnelReply(why(504)), REPLY.hostUnreachable);
    assert.equal(tunnelReply(why(599)), REPLY.generalFailure);
    assert.equal(tunnelReply(why(undefined)), REPLY.generalFailure);
});
