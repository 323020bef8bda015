/**
 * The desired counts of a stack in the store (src/state/cluster/desired.ts), on a real redis-server with
 * real `egress serve` replicas and CLI commands: a scale through a replica records them; a new leader whose
 * stack file says otherwise (another host's copy, a hand edit) applies the store's, and says so; a CLI
 * command holding the stack's lock in the store takes them into its file first and records what it left;
 * only the lock's holder can write them, and a stored count the file now refuses is not applied.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import Redis from "ioredis";
import { CLUSTER_KEYS, stackPrefix } from "../../src/state/cluster/records";
import { StoreDesired, type DesiredRecord } from "../../src/state/cluster/desired";
import { createLogger } from "../../src/log/logger";
import { cli, ProcProject, serve } from "../helpers/processes";
import type { TestRedis } from "../helpers/redis";
import { withRedisProject } from "../helpers/redis-project";
import { leaderOf } from "../helpers/replicas";
import { settled, waitFor } from "../helpers/harness";

const STACK = "desired";
const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 1, maxReplicas: 4, cooldownSeconds: 0 }],
};
let p: ProcProject;
let redis: TestRedis;
withRedisProject(STACK, config, (made) => ({ p, redis } = made));

const KEY = stackPrefix(STACK) + CLUSTER_KEYS.desired;
async function stored(): Promise<DesiredRecord | undefined> {
    const r = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    try {
        const raw = await r.get(KEY);
        return raw ? (JSON.parse(raw) as DesiredRecord) : undefined;
    } finally {
        r.disconnect();
    }
}
const outputsCount = () => {
    const r = cli(p, ["outputs", "--json"]);
    assert.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout).proxies as unknown[]).length;
};

test("a scale through a replica is recorded in the store; a new leader whose stack file says otherwise applies the store's", async () => {
    const first = await serve(p, ["--store", redis.url]);
    const leader = await leaderOf([first]);
    const put = await leader.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 3 } });
    assert.equal(put.status, 202, JSON.stringify(put.body));
    const op = await settled(leader, put.body.operation.id);
    assert.equal(op.status, "succeeded", JSON.stringify(op));
    const rec = await waitFor(
        "the counts recorded",
        async () => ((await stored())?.counts.web === 3 ? stored() : undefined),
        60_000,
        25,
    );
    assert.deepEqual(rec!.counts, { web: 3 });
    assert.equal(rec!.operation, op.id, "the operation that wrote them");
    assert.equal(rec!.by, (await leader.call("GET", "/v1/cluster")).body.leader.id);

    first.child.kill("SIGTERM");
    assert.equal(await first.exited, 0);
    // This host's copy of the stack file says 1 again: another host's stale copy, or a hand edit.
    p.setReplicas("web", 1);

    const next = await serve(p, ["--store", redis.url]);
    await leaderOf([next]);
    await waitFor(
        "the new leader converged to the store's 3",
        async () => {
            const pools = (await next.call("GET", "/v1/pools")).body.pools as { name: string; actual: number }[];
            return (
                pools.find((x) => x.name === "web")?.actual === 3 &&
                !(await next.call("GET", "/v1/operations")).body.operations.some(
                    (o: { status: string }) => o.status === "running" || o.status === "queued",
                )
            );
        },
        120_000,
        200,
    );
    assert.equal(p.replicas("web"), 3, "the stack file holds the store's count again");
    const said = next.entries.find((e) => /differs from the desired count in the store/.test(e.msg ?? ""));
    assert.ok(said, "the take-over says which count it replaced");
    assert.deepEqual([said.pool, said.file, said.desired], ["web", 1, 3]);
    next.child.kill("SIGTERM");
    assert.equal(await next.exited, 0);
    assert.equal(outputsCount(), 3);
});

test("a CLI command holding the stack's lock takes the store's counts into its file first, and records what it left", async () => {
    // The store says 3 (the test above); this host's copy says 2.
    p.setReplicas("web", 2);
    const up = cli(p, ["up", "--store", redis.url, "--quiet"]);
    assert.equal(up.code, 0, up.stderr);
    assert.match(up.stderr, /pool web replicas 2 -> 3, the desired count in the store \(written by /);
    assert.equal(p.replicas("web"), 3);
    assert.equal(outputsCount(), 3);

    const scale = cli(p, ["scale", "web", "1", "--store", redis.url, "--quiet"]);
    assert.equal(scale.code, 0, scale.stderr);
    const rec = await stored();
    assert.deepEqual(rec?.counts, { web: 1 });
    assert.match(rec!.by, /^cli:/, "written by the command, as the lock's holder");
    assert.equal(outputsCount(), 1);

    // `egress doctor` shows them beside the stack file's.
    const agree = cli(p, ["doctor", "--store", redis.url, "--json"]);
    const finding = (out: string) =>
        (JSON.parse(out).findings as { check: string; detail: string }[]).find((c) => c.check === "desired counts");
    assert.match(
        finding(agree.stdout)?.detail ?? agree.stdout,
        /the store's: web 1 \(written by cli:.*\); the stack file agrees/,
    );
    p.setReplicas("web", 2);
    const differ = cli(p, ["doctor", "--store", redis.url, "--json"]);
    assert.match(
        finding(differ.stdout)?.detail ?? differ.stdout,
        /the stack file says web 2: the next leader, or `egress up --store`, applies the store's/,
    );
    p.setReplicas("web", 1);
});

test("only the lock's holder writes the desired counts; a stored count the stack file now refuses is not applied", async () => {
    const log = createLogger({ level: "silent" });
    const raw = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    const prefix = stackPrefix(STACK);
    const a = new StoreDesired({ url: redis.url, prefix, self: "replica-a", log, retryMs: 100 });
    const b = new StoreDesired({ url: redis.url, prefix, self: "replica-b", log, retryMs: 100 });
    try {
        await raw.set(
            prefix + CLUSTER_KEYS.leader,
            JSON.stringify({ id: "replica-a", token: 7, since: "x" }),
            "PX",
            60_000,
        );
        a.record({ web: 4 }, "op_a");
        await a.flushed();
        b.record({ web: 2 });
        await assert.rejects(b.flushed(), /no longer holds the stack's lock/);
        assert.deepEqual((await stored())?.counts, { web: 4 }, "the holder's record stands");

        // The stack file now allows at most 2: the stored 4 is refused, the file's count kept and recorded.
        p.writeConfig({
            ...config,
            "egress:pools": [{ ...config["egress:pools"][0], replicas: 1, maxReplicas: 2 }],
        });
        const adopted = await a.takeOver(p.dir, STACK);
        assert.deepEqual(adopted.changed, []);
        assert.equal(adopted.refused.length, 1);
        assert.match(adopted.refused[0].rule, /must not exceed maxReplicas \(2\)/);
        assert.equal(p.replicas("web"), 1);
        await a.flushed();
        assert.deepEqual((await stored())?.counts, { web: 1 }, "the store now holds what is applied");
    } finally {
        await raw.del(prefix + CLUSTER_KEYS.leader);
        raw.disconnect();
        a.close();
        b.close();
        p.writeConfig(config);
    }
});
