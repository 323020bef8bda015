/**
 * The pool's per-site politeness (`targets`, `restAfterOkSeconds`) is validated at load: each mistake
 * names its path and rule. And the matching rule (src/model/politeness.ts) the stores share: exact
 * names before suffix patterns, the longest suffix first, targets lower-cased without a trailing dot.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseEgressConfig, problemLines } from "./config-fixtures";
import { orderRules, politenessRuleFor } from "../../src/model/politeness";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "egress-politeness-"));
const pool = (extra: object) => ({
    providers: { local: { type: "local" } },
    pools: [{ name: "a", provider: "local", replicas: 1, ...extra }],
});
const problems = (extra: object) => problemLines(pool(extra), root);

test("targets and restAfterOkSeconds: a valid config keeps them", () => {
    const targets = [
        { host: ".shop.example", maxConcurrency: 4 },
        { host: "api.shop.example", minIntervalMs: 250 },
    ];
    const cfg = parseEgressConfig(pool({ targets, restAfterOkSeconds: 5 }), root).pools[0];
    assert.deepEqual(cfg.targets, targets);
    assert.equal(cfg.restAfterOkSeconds, 5);
});

test("targets: bad entries name the path and the rule", () => {
    assert.deepEqual(problems({ targets: [{ host: "shop.example" }] }), [
        `egress:pools[0].targets[0]: needs at least one of \`maxConcurrency\` or \`minIntervalMs\` (got {"host":"shop.example"})`,
    ]);
    assert.deepEqual(problems({ targets: [{ host: "shop.example", maxConcurrency: 0 }] }), [
        "egress:pools[0].targets[0].maxConcurrency: must be 1 or more (got 0)",
    ]);
    assert.deepEqual(problems({ targets: [{ host: "shop.example", maxConcurrency: 1.5 }] }), [
        "egress:pools[0].targets[0].maxConcurrency: must be a whole number (got 1.5)",
    ]);
    assert.deepEqual(problems({ targets: [{ host: "shop.example", minIntervalMs: 600_001 }] }), [
        "egress:pools[0].targets[0].minIntervalMs: must be at most 600000 (10 minutes) (got 600001)",
    ]);
    assert.deepEqual(problems({ targets: [{ host: "shop.example", minIntervalMs: -1 }] }), [
        "egress:pools[0].targets[0].minIntervalMs: must be 0 or more (got -1)",
    ]);
    assert.match(
        problems({ targets: [{ host: "Shop.Example", maxConcurrency: 1 }] })[0],
        /^egress:pools\[0\]\.targets\[0\]\.host: must be a lower-case host name/,
    );
    assert.deepEqual(
        problems({
            targets: [
                { host: "shop.example", maxConcurrency: 1 },
                { host: "shop.example", minIntervalMs: 10 },
            ],
        }),
        ['egress:pools[0].targets[1].host: duplicates targets[0] ("shop.example") (got "shop.example")'],
    );
    assert.deepEqual(problems({ restAfterOkSeconds: -1 }), [
        "egress:pools[0].restAfterOkSeconds: must be 0 or more (got -1)",
    ]);
});

test("the matching rule: exact first, then the longest suffix; normalised targets", () => {
    const rules = orderRules([
        { host: ".example", maxConcurrency: 9 },
        { host: ".shop.example", maxConcurrency: 3 },
        { host: "api.shop.example", maxConcurrency: 1 },
    ]);
    const hostOf = (t: string) => politenessRuleFor(rules, t)?.host;
    assert.equal(hostOf("api.shop.example"), "api.shop.example");
    assert.equal(hostOf("API.Shop.Example."), "api.shop.example");
    assert.equal(hostOf("www.shop.example"), ".shop.example");
    assert.equal(hostOf("shop.example"), ".shop.example", "a suffix pattern covers its own host");
    assert.equal(hostOf("blog.example"), ".example");
    assert.equal(hostOf("notexample"), undefined, "a suffix matches at a label boundary only");
    assert.equal(politenessRuleFor(rules, undefined), undefined);
});
