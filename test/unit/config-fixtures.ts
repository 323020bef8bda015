import * as assert from "node:assert/strict";
import { ConfigError } from "../../src/config";

export * from "../../src/config";
export { PACKAGE_ROOT as PACKAGE_ROOT_FOR_TESTS } from "../../src/engine/env";

/** The problems (`path: rule`) of the ConfigError `fn` throws; fails the test when it throws anything else or nothing. */
export function problems(fn: () => unknown): string[] {
    try {
        fn();
    } catch (e) {
        assert.ok(e instanceof ConfigError, String(e));
        return e.problems.map((p) => `${p.path}: ${p.rule}`);
    }
    assert.fail("expected a ConfigError");
}
