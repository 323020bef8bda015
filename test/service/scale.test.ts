/**
 * Scale over HTTP on the real engine: 202 + operation, proxies appear and turn healthy through real
 * probes, SSE progress, the stack file follows, and a burst of 50 concurrent requests runs one engine
 * update at a time and ends at the last request's count.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { startTestService, TestService, TOKENS } from "../helpers/service";
import { settled, teardown, waitFor } from "../helpers/harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 0, maxReplicas: 8 }],
};
let svc: TestService;
const cleanup = teardown();
before(async () => {
    svc = await startTestService(config);
    cleanup.own(svc);
});

const stackReplicas = () =>
    YAML.parse(fs.readFileSync(path.join(svc.project.dir, "stacks", "Pulumi.svc.yaml"), "utf8")).config[
        "egress:pools"
    ][0].replicas;

test("PUT replicas → 202 → proxies appear and turn healthy, egress IP recorded", { timeout: 120_000 }, async () => {
    const r = await svc.call("PUT", "/v1/pools/web/replicas", { token: TOKENS.scale, body: { replicas: 3 } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    assert.match(r.headers.get("location") ?? "", /^\/v1\/operations\/op_/);
    const op = await settled(svc, r.body.operation.id);
    assert.equal(op.status, "succeeded", op.error);
    assert.equal(stackReplicas(), 3, "the desired count is written to the stack file");
    const healthy = await waitFor(
        "3 healthy proxies",
        async () => {
            const p = await svc.call("GET", "/v1/proxies?state=healthy", { token: TOKENS.discover });
            return p.body.proxies.length === 3 ? p.body.proxies : undefined;
        },
        20_000,
    );
    assert.deepEqual(healthy.map((p: any) => p.id).sort(), ["web-0", "web-1", "web-2"]);
    for (const p of healthy) assert.equal(p.egressIp, "127.0.0.1");
    const pools = await svc.call("GET", "/v1/pools", { token: TOKENS.discover });
    assert.deepEqual(pools.body.pools, [
        {
            name: "web",
            provider: "local",
            desired: 3,
            maxReplicas: 8,
            actual: 3,
            healthy: 3,
            leased: 0,
            draining: 0,
            scalable: true,
        },
    ]);
});

test("operation events stream as Server-Sent Events, replayed after the fact", { timeout: 60_000 }, async () => {
    const r = await svc.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 4 } });
    const res = await fetch(`${svc.url}/v1/operations/${r.body.operation.id}/events`, {
        headers: { authorization: `Bearer ${TOKENS.scale}` },
    });
    assert.equal(res.headers.get("content-type"), "text/event-stream");
    const text = await res.text(); // ends when the operation settles
    const events = text
        .trim()
        .split("\n\n")
        .filter((block) => !block.startsWith(":"))
        .map((block) => ({
            type: /^event: (.*)$/m.exec(block)![1],
            data: JSON.parse(/^data: (.*)$/m.exec(block)![1]),
        }));
    assert.ok(
        events.some(
            (e) => e.type === "progress" && e.data.kind === "resource-start" && e.data.name === "web-3-process",
        ),
        text.slice(0, 500),
    );
    assert.equal(events.at(-1)!.type, "status");
    assert.equal(events.at(-1)!.data.status, "succeeded");
});

test(
    "50 concurrent scale requests: one engine update at a time, final count = last accepted request",
    { timeout: 180_000 },
    async () => {
        const counts = Array.from({ length: 50 }, (_, i) => (i * 7) % 9); // 0..8, all valid
        const responses = await Promise.all(
            counts.map((replicas) =>
                svc.call("PUT", "/v1/pools/web/replicas", { token: TOKENS.scale, body: { replicas } }),
            ),
        );
        assert.ok(
            responses.every((r) => r.status === 202),
            JSON.stringify(responses.find((r) => r.status !== 202)?.body),
        );
        const opIds = [...new Set(responses.map((r) => r.body.operation.id))];
        assert.ok(opIds.length <= 3, `requests coalesce into few operations (got ${opIds.length})`);
        const ops = [];
        for (const id of opIds) ops.push(await settled(svc, id));
        assert.ok(
            ops.every((o) => o.status === "succeeded"),
            JSON.stringify(ops),
        );
        assert.equal(
            ops.reduce((n, o) => n + o.requests, 0),
            50,
            "every request is accounted for",
        );
        const byStart = [...ops].sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt));
        for (let i = 1; i < byStart.length; i++)
            assert.ok(
                Date.parse(byStart[i].startedAt) >= Date.parse(byStart[i - 1].finishedAt),
                "engine runs never overlap",
            );
        // Each response is the operation as it stood right after that request folded in: its `requests`
        // numbers the requests of the operation in the order the server took them.
        const last = byStart.at(-1)!;
        const final = last.desired.web;
        const lastResponse = responses
            .filter((r) => r.body.operation.id === last.id)
            .sort((a, b) => a.body.operation.requests - b.body.operation.requests)
            .at(-1)!;
        assert.equal(final, lastResponse.body.operation.desired.web, "the last request the server took wins");
        assert.equal(stackReplicas(), final);
        const proxies = await svc.call("GET", "/v1/proxies?pool=web", { token: TOKENS.discover });
        assert.equal(
            proxies.body.proxies.length,
            final,
            `final count ${final} (last response asked ${lastResponse.body.operation.desired.web})`,
        );
        assert.deepEqual((await svc.driver.proxies()).length, final);
    },
);

test("no token ever reaches the logs", () => {
    const all = svc.logs.join("");
    for (const t of Object.values(TOKENS)) assert.ok(!all.includes(t), "a token leaked into the logs");
    assert.ok(all.includes("[redacted]"), "authorization headers are logged redacted");
});
