/**
 * `gateway.memberConcurrency` through the gateway (issue 21): 4 real forwarding members (proxy-chain on
 * loopback) in a pool with memberConcurrency 2. 8 concurrent requests to a slow loopback origin are all
 * in flight at the origin at once (it counts them), 2 per member; a 9th waits in the gateway's waiting
 * room (waitMs) without reaching the origin until a slot frees, then succeeds.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import { Server as ProxyChainServer } from "proxy-chain";
import { listenLoopback } from "../helpers/net";
import { gatewayClient, startGatewayFleet } from "../helpers/gateway-fleet";
import type { Gateway } from "../../src/service/gateway";
import type { Fleet } from "../../src/service/fleet/fleet";
import { waitFor } from "../helpers/harness";

const TOKEN = "member-conc-token";
let origin: Awaited<ReturnType<typeof listenLoopback>>;
let members: ProxyChainServer[] = [];
let gateway: Gateway;
let fleet: Fleet;
let client: ReturnType<typeof gatewayClient>;
/** Requests the origin holds right now, and the most it held at once. */
let now = 0;
let most = 0;
/** The origin answers nothing until this opens. */
let open!: () => void;
const gate = new Promise<void>((r) => (open = r));

before(async () => {
    origin = await listenLoopback(
        http.createServer((req, res) => {
            most = Math.max(most, ++now);
            void gate.then(() => {
                now--;
                res.end(`page ${req.url}`);
            });
        }),
    );
    members = Array.from({ length: 4 }, () => new ProxyChainServer({ port: 0, host: "127.0.0.1", verbose: false }));
    await Promise.all(members.map((m) => m.listen()));
    const g = await startGatewayFleet({
        token: TOKEN,
        members: members.map((m, i) => ({ id: `web-${i}`, pool: "web", url: `http://127.0.0.1:${m.port}` })),
        pools: [{ name: "web", gateway: { retries: 0, memberConcurrency: 2 } }],
        gateway: { waitMs: 10_000 },
    });
    ({ gateway, fleet } = g);
    client = gatewayClient(g.port, TOKEN);
});

after(async () => {
    open();
    await gateway?.close(100);
    await origin?.close();
    await Promise.all(members.map((m) => m.close(true)));
});

test("4 members × memberConcurrency 2: 8 requests at the origin at once, the 9th waits for a slot", async () => {
    const site = (i: number) => `http://127.0.0.1:${origin.port}/p${i}`;
    const eight = Array.from({ length: 8 }, (_, i) => client.fetch("web", site(i)));
    await waitFor(`8 requests at the origin at once (it holds ${now})`, () => now === 8, 5_000, 20);
    assert.equal(fleet.activeLeases().length, 8);
    const perMember: Record<string, number> = {};
    for (const l of fleet.activeLeases()) perMember[l.proxy] = (perMember[l.proxy] ?? 0) + 1;
    assert.deepEqual(perMember, { "web-0": 2, "web-1": 2, "web-2": 2, "web-3": 2 }, "least loaded first");

    let ninthDone = false;
    const ninth = client.fetch("web", site(8)).finally(() => (ninthDone = true));
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(ninthDone, false, "the 9th request waits: every member carries 2");
    assert.equal(now, 8, "the 9th has not reached the origin");
    assert.equal(most, 8);

    open();
    const answers = await Promise.all([...eight, ninth]);
    assert.deepEqual(
        answers.map((a) => a.status),
        Array(9).fill(200),
        answers.map((a) => a.body).join("\n"),
    );
    assert.ok(answers.every((a, i) => a.body === `page /p${i}`));
});
