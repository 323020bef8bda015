/**
 * clients/python's own unit tests (clients/python/tests), run by Debian's /usr/bin/python3 -m unittest,
 * so `npm test` runs them; they need python3-scrapy, which the test setup installs.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { ensureTestPackages } from "../helpers/deps";
import { python } from "../helpers/python-client";

test("python3 -m unittest in clients/python passes", { timeout: 120_000 }, async () => {
    ensureTestPackages(); // python3-scrapy
    // unittest reports on stderr; python() throws with its tail when a test fails.
    await python(["-m", "unittest", "discover", "-s", "tests", "-t", "."]);
    assert.ok(true);
});
