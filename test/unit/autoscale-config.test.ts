/** A pool's `autoscale` setting: its defaults, and bad bounds refused at config load naming the path and the rule. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseEgressConfig, problemLines } from "./config-fixtures";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "egress-autoscale-config-"));
const local = (autoscale: unknown, over: object = {}) => ({
    providers: { local: { type: "local" } },
    pools: [{ name: "web", provider: "local", replicas: 1, autoscale, ...over }],
});
const problems = (raw: unknown): string[] => problemLines(raw, root);

test("autoscale gets its defaults; only max is required", () => {
    const cfg = parseEgressConfig(local({ max: 6 }), root);
    assert.deepEqual(cfg.pools[0].autoscale, {
        min: 1,
        max: 6,
        targetUtilization: 0.7,
        scaleDownAfterSeconds: 300,
        cooldownSeconds: 60,
    });
    assert.equal(parseEgressConfig(local(undefined), root).pools[0].autoscale, undefined, "unset: scaled by hand");
    assert.equal(parseEgressConfig(local({ min: 0, max: 1, targetUtilization: 1 }), root).pools[0].autoscale?.min, 0);
});

test("min above max is refused at min", () => {
    assert.deepEqual(problems(local({ min: 4, max: 3 })), [
        "egress:pools[0].autoscale.min: must not exceed max (3) (got 4)",
    ]);
});

test("targetUtilization must be in (0, 1]", () => {
    for (const t of [0, -0.5, 1.01])
        assert.deepEqual(problems(local({ max: 3, targetUtilization: t })), [
            `egress:pools[0].autoscale.targetUtilization: must be above 0 and at most 1 (got ${t})`,
        ]);
});

test("max within maxReplicas; whole numbers; no unknown fields", () => {
    assert.deepEqual(problems(local({ max: 9 }, { maxReplicas: 8 })), [
        "egress:pools[0].autoscale.max: must not exceed maxReplicas (8) (got 9)",
    ]);
    assert.match(problems(local({ max: 2.5 }))[0], /^egress:pools\[0\]\.autoscale\.max: must be a whole number/);
    assert.match(problems(local({ max: 2, minimum: 1 }))[0], /^egress:pools\[0\]\.autoscale/);
});

test("autoscale on a static pool is refused: its members follow the provider entry", () => {
    const raw = {
        providers: { byo: { type: "static", proxies: ["http://127.0.0.1:3128"] } },
        pools: [{ name: "byo", provider: "byo", replicas: 1, autoscale: { max: 2 } }],
    };
    assert.deepEqual(problems(raw), [
        "egress:pools[0].autoscale: must be unset: the members of a `static` provider follow its entry (byo), not demand",
    ]);
});
