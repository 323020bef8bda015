/**
 * Drain on the real engine with real local proxies: a scale-down never takes a leased proxy from under
 * its crawler. The member drains (never leased again, process still running) until its lease is
 * released — then the scale-down completes at once — or until drainSeconds, when its lease is ended and
 * its late release answers 410 proxy_removed with the reason. A scale-up during the drain keeps it.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import YAML from "yaml";
import { convergedOk, startTestService, TestService, TOKENS } from "../helpers/service";
import { findProxyProcesses } from "../../components/local/process";
import { settled, teardown, waitFor } from "../helpers/harness";

const SLOW_DRAIN_S = 30;
let svc: TestService;
const cleanup = teardown();
before(async () => {
    svc = await startTestService({
        "egress:providers": { local: { type: "local" } },
        "egress:pools": [
            { name: "slow", provider: "local", replicas: 3, maxReplicas: 4, drainSeconds: SLOW_DRAIN_S },
            { name: "fast", provider: "local", replicas: 3, maxReplicas: 4, drainSeconds: 2 },
        ],
    });
    cleanup.own(svc);
    await convergedOk(svc);
    await waitFor(
        "6 ready proxies",
        async () => {
            const p = await proxies();
            return p.length === 6 && p.every((x) => x.lifecycle === "ready" && x.health === "healthy") ? p : undefined;
        },
        30_000,
    );
});

const proxies = async () => (await svc.call("GET", "/v1/proxies", { token: TOKENS.discover })).body.proxies as any[];
const proxy = async (id: string) => (await proxies()).find((p) => p.id === id);
const lease = (pool: string) => svc.call("POST", "/v1/leases", { token: TOKENS.lease, body: { pool } });
const release = (id: string, outcome = "ok") =>
    svc.call("POST", `/v1/leases/${id}/release`, { token: TOKENS.lease, body: { outcome } });
const processOf = (member: string) => findProxyProcesses(path.join(svc.runDir, "local", "svc"), `svc-${member}`);
const stackReplicas = (pool: string) =>
    YAML.parse(fs.readFileSync(path.join(svc.project.dir, "stacks", "Pulumi.svc.yaml"), "utf8")).config[
        "egress:pools"
    ].find((p: any) => p.name === pool).replicas;
const operation = async (id: string) =>
    (await svc.call("GET", `/v1/operations/${id}`, { token: TOKENS.scale })).body.operation;

/** A release with a chunked body: the lease fast path leaves those to Express. */
function chunkedRelease(id: string): Promise<{ status: number; body: any }> {
    return new Promise((resolve, reject) => {
        const req = http.request(
            `${svc.url}/v1/leases/${id}/release`,
            {
                method: "POST",
                headers: { "content-type": "application/json", authorization: `Bearer ${TOKENS.lease}` },
            },
            (res) => {
                let text = "";
                res.on("data", (c) => (text += c));
                res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
            },
        );
        req.on("error", reject);
        req.write('{"outcome"');
        req.end(':"ok"}');
    });
}

/** Leases every member of `pool` and releases all but `member`'s lease, which it returns. */
async function leaseMember(pool: string, member: string): Promise<string> {
    const taken: { id: string; proxy: string }[] = [];
    for (;;) {
        const r = await lease(pool);
        if (r.status !== 201) break;
        taken.push({ id: r.body.lease.id, proxy: r.body.lease.proxy.id });
    }
    const mine = taken.find((l) => l.proxy === member);
    assert.ok(mine, `${member} was leased: ${JSON.stringify(taken)}`);
    for (const l of taken) if (l !== mine) assert.equal((await release(l.id)).status, 200);
    return mine.id;
}

test(
    "scale 3→2 while slow-2 is leased: it drains (not leased again, process running); the release completes the scale-down at once",
    { timeout: 120_000 },
    async () => {
        const leaseId = await leaseMember("slow", "slow-2");
        const r = await svc.call("PUT", "/v1/pools/slow/replicas", { token: TOKENS.scale, body: { replicas: 2 } });
        assert.equal(r.status, 202);
        const draining = await waitFor(
            "slow-2 draining",
            async () => {
                const p = await proxy("slow-2");
                return p?.lifecycle === "draining" ? p : undefined;
            },
            20_000,
            50,
        );
        assert.equal(draining.leased, true);
        const until = Date.parse(draining.drainingUntil);
        assert.ok(
            until - Date.now() > (SLOW_DRAIN_S - 10) * 1000,
            `drains for about drainSeconds: ${draining.drainingUntil}`,
        );
        assert.equal(
            stackReplicas("slow"),
            2,
            "the new count is in the stack file while it drains (a restart applies it)",
        );

        const op = await operation(r.body.operation.id);
        assert.equal(op.status, "running");
        assert.equal(op.drain.draining, true);
        assert.deepEqual(op.drain.members, [
            { member: "slow-2", reason: "scaled-down", until: draining.drainingUntil, state: "waiting" },
        ]);

        // Never leased again: the two others are, then nothing is available.
        const others = [await lease("slow"), await lease("slow")];
        assert.deepEqual(
            others.map((x) => x.status),
            [201, 201],
        );
        assert.deepEqual(others.map((x) => x.body.lease.proxy.id).sort(), ["slow-0", "slow-1"]);
        assert.equal((await lease("slow")).status, 503, "the draining member is not leased");
        const listed = (await svc.call("GET", "/v1/proxies?lifecycle=draining", { token: TOKENS.discover })).body
            .proxies;
        assert.deepEqual(
            listed.map((x: any) => x.id),
            ["slow-2"],
        );
        for (const o of others) await release(o.body.lease.id);
        assert.equal(processOf("slow-2").length, 1, "its proxy still runs while the lease does");
        assert.equal((await operation(r.body.operation.id)).status, "running", "the scale-down waits for the lease");

        const releasedAt = Date.now();
        assert.equal((await release(leaseId)).status, 200, "the crawler's release works as usual");
        const done = await settled(svc, r.body.operation.id);
        assert.equal(done.status, "succeeded", done.error);
        assert.ok(Date.parse(done.finishedAt) < until, "done before drainSeconds ran out");
        assert.equal(done.drain.draining, false);
        assert.equal(done.drain.members[0].state, "idle");
        assert.deepEqual(done.applied, { slow: 2 });
        assert.deepEqual(processOf("slow-2"), [], "the proxy process is gone");
        assert.equal(await proxy("slow-2"), undefined);
        const ms = Date.parse(done.finishedAt) - releasedAt;
        process.stdout.write(`# release → scale-down done: ${ms} ms (drainSeconds ${SLOW_DRAIN_S})\n`);
    },
);

test(
    "a lease never released: the member goes after drainSeconds, and the late release answers 410 proxy_removed with the reason",
    { timeout: 120_000 },
    async () => {
        const leaseId = await leaseMember("fast", "fast-2");
        const r = await svc.call("PUT", "/v1/pools/fast/replicas", { token: TOKENS.scale, body: { replicas: 2 } });
        assert.equal(r.status, 202);
        const done = await settled(svc, r.body.operation.id);
        assert.equal(done.status, "succeeded", done.error);
        const m = done.drain.members[0];
        assert.deepEqual([m.member, m.reason, m.state], ["fast-2", "scaled-down", "timed-out"]);
        assert.ok(Date.parse(done.finishedAt) >= Date.parse(m.until), "removed only after the drain deadline");
        assert.ok(
            Date.parse(m.until) - Date.parse(done.startedAt) >= 1900,
            `about drainSeconds (2 s) after it started: ${m.until} vs ${done.startedAt}`,
        );
        assert.deepEqual(processOf("fast-2"), []);
        assert.equal(await proxy("fast-2"), undefined);

        const late = await release(leaseId);
        assert.equal(late.status, 410, JSON.stringify(late.body));
        assert.equal(late.body.error.code, "proxy_removed");
        assert.match(
            late.body.error.message,
            /member fast-2 was scaled away \(pool fast scaled to 2\); its lease outlived drainSeconds/,
        );
        assert.equal(late.body.error.details.reason, "scaled-down");
        assert.equal(late.body.error.details.member, "fast-2");
        // The same answer through Express (a content type the fast path leaves to it).
        const viaExpress = await chunkedRelease(leaseId);
        assert.equal(viaExpress.status, late.status);
        assert.deepEqual(viaExpress.body, late.body);
        assert.ok(
            svc.logs.some((l) => l.includes("drain deadline reached") && l.includes("fast-2")),
            "the ended lease is logged",
        );
    },
);

test(
    "a scale-up during a scale-down's drain keeps the member: drain cancelled, lease still valid",
    { timeout: 120_000 },
    async () => {
        const leaseId = await leaseMember("slow", "slow-1");
        const down = await svc.call("PUT", "/v1/pools/slow/replicas", { token: TOKENS.scale, body: { replicas: 1 } });
        await waitFor("slow-1 draining", async () => (await proxy("slow-1"))?.lifecycle === "draining", 20_000, 50);
        const up = await svc.call("PUT", "/v1/pools/slow/replicas", { token: TOKENS.scale, body: { replicas: 2 } });
        assert.equal(up.status, 202);
        assert.equal(
            up.body.operation.id,
            down.body.operation.id,
            "folds into the draining operation, which has applied nothing yet",
        );
        const done = await settled(svc, down.body.operation.id);
        assert.equal(done.status, "succeeded", done.error);
        assert.equal(done.requests, 2);
        const kept = done.drain.members.find((m: any) => m.member === "slow-1");
        assert.equal(kept?.state, "kept", JSON.stringify(done.drain));
        assert.ok(
            Date.parse(done.finishedAt) < Date.parse(kept.until),
            `did not wait out the drain: finished ${done.finishedAt}, drain deadline ${kept.until}`,
        );
        assert.equal(stackReplicas("slow"), 2);
        const p = await proxy("slow-1");
        assert.equal(p.lifecycle, "ready");
        assert.equal(p.leased, true);
        assert.equal(processOf("slow-1").length, 1);
        assert.equal((await release(leaseId)).status, 200, "the lease was never ended");
    },
);
