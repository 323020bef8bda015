/**
 * `gateway.memberConcurrency` (src/model/pool-policies.ts) is validated at load with errors naming the path and
 * the rule; unset, the pool's gateway section stays as written and the stores use 1 (one gateway request
 * per member, as before).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { GATEWAY_MEMBER_CONCURRENCY_DEFAULT, parseEgressConfig, problemLines } from "./config-fixtures";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "egress-member-conc-"));
const config = (gateway: unknown) => ({
    providers: { local: { type: "local" } },
    pools: [{ name: "a", provider: "local", replicas: 1, gateway }],
});

test("`gateway.memberConcurrency` is a whole number 1..64, named by its path when it is not", () => {
    assert.deepEqual(problemLines(config({ memberConcurrency: 0 }), root), [
        "egress:pools[0].gateway.memberConcurrency: must be 1 (one request per member) or more (got 0)",
    ]);
    assert.deepEqual(problemLines(config({ memberConcurrency: 65 }), root), [
        "egress:pools[0].gateway.memberConcurrency: must be at most 64 (got 65)",
    ]);
    assert.deepEqual(problemLines(config({ memberConcurrency: 2.5 }), root), [
        "egress:pools[0].gateway.memberConcurrency: must be a whole number (got 2.5)",
    ]);
    assert.deepEqual(parseEgressConfig(config({ memberConcurrency: 8 }), root).pools[0].gateway, {
        retries: 1,
        memberConcurrency: 8,
    });
    assert.deepEqual(parseEgressConfig(config({}), root).pools[0].gateway, { retries: 1 }, "unset: 1 where used");
    assert.equal(GATEWAY_MEMBER_CONCURRENCY_DEFAULT, 1);
});
