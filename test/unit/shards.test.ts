/**
 * Shard layout (src/model/shards.ts) and the `membersPerStack` config rules: where each member lives, the
 * shard stack names, URNs moved between stacks, and the kinds that may not shard refused at the path.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import {
    inMainStack,
    parseEgressConfig,
    parseShardStack,
    problemLines,
    shardOfIndex,
    shardsFor,
    shardStackName,
    stackOfUrn,
    urnInStack,
} from "./config-fixtures";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "egress-shards-"));

test("members 0..n-1 stay in the installation's stack; shard k holds kn..(k+1)n-1", () => {
    assert.equal(shardOfIndex(0, 100), 0);
    assert.equal(shardOfIndex(99, 100), 0);
    assert.equal(shardOfIndex(100, 100), 1);
    assert.equal(shardOfIndex(1009, 100), 10);
    assert.ok(inMainStack({}, 5000), "an unsharded pool keeps every member in the installation's stack");
    assert.ok(inMainStack({ membersPerStack: 100 }, 99));
    assert.ok(!inMainStack({ membersPerStack: 100 }, 100));
});

test("shardsFor lists the shard stacks the counts need, none for unsharded or small pools", () => {
    const pools = [
        { name: "web", replicas: 250, membersPerStack: 100 },
        { name: "api", replicas: 100, membersPerStack: 100 },
        { name: "big", replicas: 5000 },
    ];
    assert.deepEqual(shardsFor("prod", pools), [
        { stack: "prod.web.1", pool: "web", k: 1, from: 100, to: 200 },
        { stack: "prod.web.2", pool: "web", k: 2, from: 200, to: 300 },
    ]);
    // With a spare: each sharded pool's next shard too (web's 3, api's 1), ready to grow into.
    assert.deepEqual(
        shardsFor("prod", pools, { spare: true }).map((s) => s.stack),
        ["prod.web.1", "prod.web.2", "prod.web.3", "prod.api.1"],
    );
    assert.deepEqual(shardsFor("prod", [{ name: "web", replicas: 0, membersPerStack: 10 }], { spare: true }), []);
});

test("shard stack names round-trip, and other names are not shards", () => {
    assert.equal(shardStackName("dev", "web", 3), "dev.web.3");
    assert.deepEqual(parseShardStack("dev.web.3"), { stack: "dev", pool: "web", k: 3 });
    assert.deepEqual(parseShardStack("team.prod.web-eu.12"), { stack: "team.prod", pool: "web-eu", k: 12 });
    for (const name of ["dev", "dev.web", "dev.web.0", "dev.web.01", "dev.Web.1", "dev.web.x"])
        assert.equal(parseShardStack(name), undefined, name);
});

test("a URN moves to another stack with its parent chain and name intact", () => {
    const urn = "urn:pulumi:dev::egress::egress:index:ProxyPool$egress:local:LocalProxy::web-120";
    assert.equal(stackOfUrn(urn), "dev");
    const moved = urnInStack(urn, "dev.web.1");
    assert.equal(moved, "urn:pulumi:dev.web.1::egress::egress:index:ProxyPool$egress:local:LocalProxy::web-120");
    assert.equal(stackOfUrn(moved), "dev.web.1");
});

test("membersPerStack is refused for kinds whose members need their pool's resources, naming the path", () => {
    const lines = problemLines(
        {
            providers: { byo: { type: "static", proxies: ["http://127.0.0.1:1"] } },
            pools: [{ name: "web", provider: "byo", replicas: 1, membersPerStack: 2 }],
        },
        root,
    );
    assert.ok(
        lines.some(
            (l) =>
                l.includes("egress:pools[0].membersPerStack") && l.includes("kinds that can: local, gcp, kubernetes"),
        ),
        lines.join("\n"),
    );
    const bad = problemLines(
        {
            providers: { l: { type: "local" } },
            pools: [{ name: "web", provider: "l", replicas: 3, membersPerStack: 0 }],
        },
        root,
    );
    assert.ok(
        bad.some((l) => l.includes("egress:pools[0].membersPerStack")),
        bad.join("\n"),
    );
    const ok = parseEgressConfig(
        {
            providers: { l: { type: "local" } },
            pools: [{ name: "web", provider: "l", replicas: 3, membersPerStack: 2 }],
        },
        root,
    );
    assert.equal(ok.pools[0].membersPerStack, 2);
});
