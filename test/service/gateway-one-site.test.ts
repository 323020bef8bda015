/**
 * Out of the box, the gateway can crawl one site (issue 21): the service with its default settings (no
 * rest after `ok`, a 5 s wait for a busy pool) and 4 real `local` members. 200 concurrent requests to
 * one loopback origin all succeed, served 4 at a time (the origin counts how many it has at once); the
 * waits show in /metrics. Then every member is held by API leases: a gateway request waits its bound
 * and gets 503 + Retry-After, and one whose client hangs up while waiting leaves nothing behind (no
 * stuck lease, the waiting gauge back at 0).
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import * as net from "node:net";
import { listenLoopback, viaProxy } from "../helpers/net";
import { settledConverge, startTestService, TestService, TOKENS, waitHealthy } from "../helpers/service";
import { find, parseSamples } from "../helpers/metrics";
import { teardown, waitFor } from "../helpers/harness";

let svc: TestService;
let origin: { port: number; close(): Promise<void> };
let now = 0;
let most = 0;
let served = 0;

const auth = `Basic ${Buffer.from(`web:${TOKENS.lease}`).toString("base64")}`;
const site = (p: string) => `http://127.0.0.1:${origin.port}${p}`;
/** The sum of a metric's samples in a scrape (undefined when it has none). */
const metric = async (name: string) => {
    const samples = find(parseSamples(await (await fetch(`${svc.url}/metrics`)).text()), name);
    return samples.length ? samples.reduce((n, s) => n + s.value, 0) : undefined;
};

const cleanup = teardown();
before(async () => {
    // A page that takes 20 ms, so requests overlap and the origin sees how many come at once.
    const server = http.createServer((req, res) => {
        most = Math.max(most, ++now);
        setTimeout(() => {
            now--;
            served++;
            res.writeHead(200, { "content-type": "text/plain" }).end(`page ${req.url}`);
        }, 20);
    });
    origin = await listenLoopback(server);
    cleanup.own(origin);
    svc = await startTestService(
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [{ name: "web", provider: "local", replicas: 4, maxReplicas: 4 }],
        },
        { gateway: { port: 0 } }, // every other gateway and lease setting at its default
    );
    cleanup.own(svc);
    await settledConverge(svc);
    await waitHealthy(svc, 4);
});

test("200 concurrent requests to one site through 4 members all succeed, 4 at a time", async () => {
    const answers = await Promise.all(
        Array.from({ length: 200 }, (_, i) => viaProxy(svc.gatewayPort!, site(`/p${i}`), auth)),
    );
    const statuses = new Map<number, number>();
    for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
    assert.deepEqual([...statuses], [[200, 200]], "every request answered 200");
    assert.equal(served, 200);
    assert.equal(most, 4, "the origin saw at most (and at some point exactly) 4 requests at once");
    assert.ok(answers.every((a, i) => a.body === `page /p${i}`));
    assert.ok(((await metric("egress_gateway_wait_seconds_count")) ?? 0) > 0, "the waits are in /metrics");
    assert.equal(await metric("egress_gateway_waiting_requests"), 0);
});

test("with every member leased: a waiting request gets 503 + Retry-After after its bound; a client that hangs up leaves nothing", async () => {
    const held: string[] = [];
    for (let i = 0; i < 4; i++) {
        const r = await svc.call("POST", "/v1/leases", { token: TOKENS.lease, body: { pool: "web", ttlSeconds: 60 } });
        assert.equal(r.status, 201, JSON.stringify(r.body));
        held.push(r.body.lease.id);
    }
    try {
        // A client that gives up while waiting: its socket closes, it leaves the line.
        const quitter = net.connect(svc.gatewayPort!, "127.0.0.1");
        await new Promise<void>((r) => quitter.once("connect", () => r()));
        quitter.write(`GET ${site("/quit")} HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Authorization: ${auth}\r\n\r\n`);
        await waitFor("the quitter waiting", async () => (await metric("egress_gateway_waiting_requests")) === 1, 3000);
        quitter.destroy();
        await waitFor("nobody waiting", async () => (await metric("egress_gateway_waiting_requests")) === 0, 3000);

        const t0 = Date.now();
        const a = await viaProxy(svc.gatewayPort!, site("/late"), auth);
        const waited = Date.now() - t0;
        assert.equal(a.status, 503, a.body);
        assert.equal(JSON.parse(a.body).error.code, "none_available");
        // RFC 9209: the gateway answered for itself, no member was tried.
        assert.equal(a.headers["proxy-status"], 'egress; error=proxy_internal_response; details="none_available"');
        assert.ok(Number(a.headers["retry-after"]) >= 1);
        assert.ok(waited >= 4500 && waited < 9000, `waited about the 5 s bound (${waited} ms)`);
    } finally {
        for (const id of held)
            await svc.call("POST", `/v1/leases/${id}/release`, { token: TOKENS.lease, body: { outcome: "ok" } });
    }
    // Nothing stuck: all four members free again, and a request goes straight through.
    const proxies = (await svc.call("GET", "/v1/proxies", { token: TOKENS.discover })).body.proxies;
    assert.deepEqual(
        proxies.map((p: { leased: boolean }) => p.leased),
        [false, false, false, false],
    );
    assert.equal((await viaProxy(svc.gatewayPort!, site("/after"), auth)).status, 200);
    assert.equal(served, 201, "the quitter's request never reached the site");
});
