/**
 * The gateway's connections to a member honour the member's `Keep-Alive: timeout=N` (issue 34): Node's
 * agent closes an idle member connection a second before the member would, instead of keeping it until
 * the member closes it and then sending a request on it just as it goes (ECONNRESET, charged to the
 * member). The member here is a real node:http server answering absolute-form requests, as a forward
 * proxy does, with a keep-alive timeout of 3 s (it says `Keep-Alive: timeout=3`); it records how each of
 * its connections ended.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import type { Socket } from "node:net";
import { listenLoopback } from "../helpers/net";
import { gatewayClient, startGatewayFleet } from "../helpers/gateway-fleet";
import type { Gateway } from "../../src/service/gateway";

const TOKEN = "tok-keepalive-0123456789abcdef";
let gateway: Gateway;
let member: Awaited<ReturnType<typeof listenLoopback>>;
let client: ReturnType<typeof gatewayClient>;
/** Each member connection: when it opened and when the gateway's side ended it (its FIN reached us). */
const conns: { openedAt: number; clientEndedAt?: number }[] = [];

before(async () => {
    const server = http.createServer((req, res) => res.end(`member saw ${req.url}`));
    server.keepAliveTimeout = 3_000;
    server.on("connection", (s: Socket) => {
        const c: (typeof conns)[number] = { openedAt: Date.now() };
        conns.push(c);
        s.on("end", () => (c.clientEndedAt ??= Date.now()));
    });
    member = await listenLoopback(server);
    const started = await startGatewayFleet({
        token: TOKEN,
        members: [{ id: "ka-0", pool: "ka", url: member.url }],
        pools: [{ name: "ka" }],
    });
    gateway = started.gateway;
    client = gatewayClient(started.port, TOKEN);
});
after(async () => {
    await gateway?.close(0);
    await member?.close();
});

test("an idle member connection is closed by the gateway before the member's keep-alive timeout", async () => {
    const first = await client.fetch("ka", "http://origin.test/one");
    assert.equal(first.status, 200, first.body);
    const answeredAt = Date.now();
    // The hint is 3 s: the agent lets the socket go after 2 s idle; the member would close it at 3 s.
    await new Promise((r) => setTimeout(r, 2_600));
    assert.equal(conns.length, 1);
    const ended = conns[0].clientEndedAt;
    assert.ok(ended !== undefined, "the gateway closed its idle connection before the member's timeout ran out");
    assert.ok(ended - answeredAt < 2_600, `closed ${ended - answeredAt} ms after the answer`);
    // The next request gets a new connection, and an answer.
    const second = await client.fetch("ka", "http://origin.test/two");
    assert.equal(second.status, 200, second.body);
    assert.equal(conns.length, 2);
});
