import * as assert from "node:assert/strict";
import { ConfigError, parseEgressConfig } from "../../src/config";

export * from "../../src/config";
export * from "../../src/model";
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

/** The formatted problem lines of the ConfigError that parsing `raw` throws; fails the test when it is accepted. */
export function problemLines(raw: unknown, root: string): string[] {
    try {
        parseEgressConfig(raw, root);
    } catch (e) {
        assert.ok(e instanceof ConfigError, `expected ConfigError, got ${e}`);
        return e.message
            .split("\n")
            .slice(1)
            .map((l) => l.replace(/^\s+- /, ""));
    }
    assert.fail("config was accepted");
}
