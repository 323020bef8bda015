/**
 * The pure parts of the gateway's retries (issue 21): which requests may be replayed (replay.ts), the
 * bound (`gateway.retries` per pool, validated at load; `_retries_<n>` in the username lowers it) and
 * the username flag's grammar. The retries themselves run in test/service/gateway-retries.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseEgressConfig, problemLines } from "./config-fixtures";
import { MAX_REPLAY_BODY, replayOf } from "../../src/service/gateway/replay";
import { Retries } from "../../src/service/gateway/retries";
import { parseUsername } from "../../src/service/gateway/username";
import type { Fleet } from "../../src/service/fleet/fleet";

test("replayable: no body whatever the method; a small known-length body only with an idempotent method", () => {
    for (const m of ["GET", "HEAD", "OPTIONS", "DELETE", "POST"]) {
        assert.equal(replayOf(m, {}), "empty", m);
        assert.equal(replayOf(m, { "content-length": "0" }), "empty", m);
    }
    assert.equal(replayOf("PUT", { "content-length": "10" }), "buffer");
    assert.equal(replayOf("GET", { "content-length": String(MAX_REPLAY_BODY) }), "buffer");
    assert.equal(replayOf("delete", { "content-length": "1" }), "buffer", "methods are compared case-insensitively");
});

test("never replayed: bodies of non-idempotent methods, bodies over the limit, chunked or unreadable lengths", () => {
    assert.equal(replayOf("POST", { "content-length": "10" }), "stream");
    assert.equal(replayOf("PATCH", { "content-length": "10" }), "stream");
    assert.equal(replayOf("PUT", { "content-length": String(MAX_REPLAY_BODY + 1) }), "stream");
    assert.equal(replayOf("GET", { "transfer-encoding": "chunked" }), "stream");
    assert.equal(replayOf("GET", { "transfer-encoding": "chunked", "content-length": "0" }), "stream");
    assert.equal(replayOf("PUT", { "content-length": "1e3" }), "stream");
    assert.equal(replayOf(undefined, { "content-length": "5" }), "stream");
});

test("`_retries_<n>` in the username: 0–5, at most once", () => {
    assert.deepEqual(parseUsername("web_retries_0"), { ok: true, user: { pool: "web", retries: 0 } });
    assert.deepEqual(parseUsername("web_session_s1_retries_5"), {
        ok: true,
        user: { pool: "web", session: "s1", retries: 5 },
    });
    for (const [raw, why] of [
        ["web_retries_6", /gives `retries` a value that is not a whole number from 0 to 5/],
        ["web_retries_-1", /gives `retries` a value that is not a whole number from 0 to 5/],
        ["web_retries_01", /gives `retries` a value that is not a whole number from 0 to 5/],
        ["web_retries_1_retries_0", /gives `retries` twice/],
    ] as const) {
        const r = parseUsername(raw);
        assert.ok(!r.ok, raw);
        assert.match(r.message, why, raw);
        assert.match(r.message, /\[_retries_<n>\]/, "the grammar in the message names the flag");
    }
});

const root = fs.mkdtempSync(path.join(os.tmpdir(), "egress-retries-"));
const config = (gateway: unknown) => ({
    providers: { local: { type: "local" } },
    pools: [{ name: "a", provider: "local", replicas: 1, gateway }],
});

test("`gateway.retries` is validated at load, errors naming the path", () => {
    assert.deepEqual(problemLines(config({ retries: 6 }), root), [
        "egress:pools[0].gateway.retries: must be at most 5 (got 6)",
    ]);
    assert.deepEqual(problemLines(config({ retries: -1 }), root), [
        "egress:pools[0].gateway.retries: must be 0 (no retries) or more (got -1)",
    ]);
    assert.deepEqual(problemLines(config({ retries: 1.5 }), root), [
        "egress:pools[0].gateway.retries: must be a whole number (got 1.5)",
    ]);
    assert.deepEqual(problemLines(config({ retry: 1 }), root), ["egress:pools[0].gateway: unknown key(s) `retry`"]);
    assert.deepEqual(parseEgressConfig(config({}), root).pools[0].gateway, { retries: 1 });
    assert.equal(parseEgressConfig(config(undefined), root).pools[0].gateway, undefined, "unset: defaults where used");
});

test("`gateway.retryOnBlock` is validated at load the same way; unset means 0 (blocks are relayed)", () => {
    assert.deepEqual(problemLines(config({ retryOnBlock: 9 }), root), [
        "egress:pools[0].gateway.retryOnBlock: must be at most 5 (got 9)",
    ]);
    assert.deepEqual(problemLines(config({ retryOnBlock: -2 }), root), [
        "egress:pools[0].gateway.retryOnBlock: must be 0 (relay blocks) or more (got -2)",
    ]);
    assert.deepEqual(parseEgressConfig(config({ retryOnBlock: 2 }), root).pools[0].gateway, {
        retries: 1,
        retryOnBlock: 2,
    });
    const retries = new Retries({
        fleet: { poolConfigs: () => [{ name: "b", gateway: { retries: 0, retryOnBlock: 3 } }, { name: "p" }] } as never,
        flights: {
            closing: false,
            end: () => assert.fail(),
            launch: () => assert.fail(),
            outcome: () => assert.fail(),
        },
        ttlSeconds: 60,
    });
    assert.equal(retries.budget({ pool: "b" }, "block"), 3);
    assert.equal(retries.budget({ pool: "b" }, "error"), 0, "its own budget, beside the member-failure one");
    assert.equal(retries.budget({ pool: "b", retries: 1 }, "block"), 1, "the username lowers it");
    assert.equal(retries.budget({ pool: "p" }, "block"), 0);
});

test("the bound: the pool's `gateway.retries` (default 1), lowered by the username, never raised", () => {
    const pools = [
        { name: "zero", gateway: { retries: 0 } },
        { name: "three", gateway: { retries: 3 } },
        { name: "plain" },
    ];
    const retries = new Retries({
        fleet: { poolConfigs: () => pools } as unknown as Fleet,
        flights: {
            closing: false,
            end: () => assert.fail(),
            launch: () => assert.fail(),
            outcome: () => assert.fail(),
        },
        ttlSeconds: 60,
    });
    assert.equal(retries.budget({ pool: "plain" }), 1);
    assert.equal(retries.budget({ pool: "plain", retries: 4 }), 1);
    assert.equal(retries.budget({ pool: "three" }), 3);
    assert.equal(retries.budget({ pool: "three", retries: 2 }), 2);
    assert.equal(retries.budget({ pool: "three", retries: 0 }), 0);
    assert.equal(retries.budget({ pool: "zero", retries: 5 }), 0);
    assert.equal(retries.budget({ pool: "gone" }), 1, "a pool the config no longer has: the default");
});

test("a retry through a store across the network: the next lease comes later; a store failure gives the failure back", async () => {
    const lease = { id: "l2", proxy: { id: "m-2", pool: "p" } };
    const asked: unknown[] = [];
    let answer: Promise<unknown> = Promise.resolve({ ok: true, lease });
    const fleet = {
        poolConfigs: () => [{ name: "p" }],
        acquire: (req: unknown) => {
            asked.push(req);
            return answer;
        },
        release: () => ({ ok: true }),
    };
    const started: unknown[] = [];
    const retries = new Retries({
        fleet: fleet as unknown as Fleet,
        flights: {
            closing: false,
            end: () => undefined,
            outcome: () => "error",
            launch: (a) => {
                started.push(a);
                return { ...a, attempt: 2 } as never;
            },
        },
        ttlSeconds: 60,
    });
    const flight = () =>
        ({
            pool: "p",
            lease: { id: "l1" },
            attempt: 1,
            replayable: true,
            ended: false,
            tried: ["m-1"],
            ask: { pool: "p", target: "example.org", ttlSeconds: 60 },
            socket: { destroyed: false },
            leave: () => undefined,
        }) as never;
    const decided = (f: never) =>
        new Promise<boolean>((resolve) => retries.failed(f, "connection_refused", resolve, () => undefined));
    const first = flight() as { handedOver?: boolean };
    assert.equal(await decided(first as never), true);
    assert.deepEqual(asked[0], {
        pool: "p",
        target: "example.org",
        ttlSeconds: 60,
        exclude: ["m-1"],
        replaces: { leaseId: "l1", outcome: "error" },
    });
    assert.equal((started[0] as { lease: unknown }).lease, lease);
    assert.equal(first.handedOver, true, "the store ended the failed lease: the flight's end releases nothing");
    answer = Promise.reject(new Error("store down"));
    const unanswered = flight() as { handedOver?: boolean };
    assert.equal(await decided(unanswered as never), false);
    assert.equal(unanswered.handedOver, undefined, "no answer from the store: the flight's end still releases");
    answer = Promise.resolve({ ok: false, reason: "none-available", message: "", retryAfterSeconds: 1 });
    const refused = flight() as { handedOver?: boolean };
    assert.equal(await decided(refused as never), false);
    assert.equal(refused.handedOver, true, "refused, but the failed lease ended in the same step");
    assert.equal(started.length, 1);
});
