/**
 * src/engine/lazy-closure.ts: with it installed, loading the Pulumi SDK loads neither the TypeScript
 * compiler nor npm's Arborist; serializing a function (what the program does with the provider loaders)
 * still works, and loads them then. In-process: this file loads the SDK only after the hook, and node's
 * runner gives each test file a process of its own.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { installLazyClosure } from "../../src/engine/lazy-closure";

const loaded = (pkg: RegExp) => Object.keys(require.cache).some((f) => pkg.test(f));
const TYPESCRIPT = /[\\/]node_modules[\\/]typescript[\\/]/;
const ARBORIST = /[\\/]node_modules[\\/]@npmcli[\\/]arborist[\\/]/;

test("the SDK loads without the closure serializer's TypeScript and Arborist; serializing loads them and works", async () => {
    installLazyClosure(); // installed on import already: a second call changes nothing
    assert.ok(!loaded(/[\\/]@pulumi[\\/]pulumi[\\/]index\.js$/), "this file has not loaded the SDK before the hook");
    const pulumi = require("@pulumi/pulumi") as typeof import("@pulumi/pulumi");
    assert.ok(!loaded(TYPESCRIPT), "TypeScript is not loaded with the SDK");
    assert.ok(!loaded(ARBORIST), "Arborist is not loaded with the SDK");

    const captured = { port: 8123 };
    const f = await pulumi.runtime.serializeFunction(() => captured.port + 1);
    assert.match(f.text, /8123/, "the captured value is in the serialized text");
    assert.equal(f.exportName, "handler");
    const made = require("node:vm").runInNewContext(`${f.text}; exports.handler`, { exports: {} }) as () => number;
    assert.equal(made(), 8124, "the serialized function runs");
    assert.ok(loaded(TYPESCRIPT), "serializing parsed the function with the real TypeScript");
});
