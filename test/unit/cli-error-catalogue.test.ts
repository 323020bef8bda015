/**
 * The CLI's error catalogue (src/model/error-catalogue.ts): every error class in src/ and components/
 * declares its exit code and its `--json` error.type, they are the ones each class has always had, and
 * docs/operations.md's table says the same.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { PACKAGE_ROOT } from "../../src/engine/env";
import { catalogueOf, type CatalogueEntry, EXIT } from "../../src/model";
import { exitCodeOf, UsageError } from "../../src/cli/context";
import { ConfigError } from "../../src/config";
import { BackendUnreachableError, EngineError } from "../../src/engine";

/**
 * What each class printed and exited with before the catalogue (the `exitCodeOf` ternary and `e.name`):
 * a change here is a change scripts see. The gateway's FramingError never leaves the gateway (it answers
 * the client itself), so it is the one class without an entry.
 */
const EXPECTED: Record<string, [number, string]> = {
    ForeignInstallationError: [1, "ForeignInstallationError"],
    ConfigError: [2, "ConfigError"],
    PassphraseMismatchError: [3, "PassphraseMismatchError"],
    EngineError: [1, "EngineError"],
    BackendUnreachableError: [75, "BackendUnreachableError"],
    EngineMissingError: [3, "EngineMissingError"],
    StackMissingError: [2, "StackMissingError"],
    WriterLockBusyError: [1, "WriterLockBusyError"],
    MemberNotInStateError: [2, "MemberNotInStateError"],
    ForgetRefusedError: [1, "ForgetRefusedError"],
    UsageError: [2, "Error"],
    InterruptedError: [130, "InterruptedError"],
    LockLostError: [4, "LockLostError"],
    ReplicaLeadsError: [1, "ReplicaLeadsError"],
    StoreLockBusyError: [1, "StoreLockBusyError"],
    HttpError: [1, "Error"],
    NoRoomToRollError: [1, "NoRoomToRollError"],
    DrainInterrupted: [1, "Error"],
    NotAcceptingError: [1, "NotAcceptingError"],
    StoreSpecError: [1, "Error"],
    StoreUnavailableError: [75, "StoreUnavailableError"],
    ForeignHomeError: [1, "ForeignHomeError"],
    NotHolderError: [1, "NotHolderError"],
    RestApiError: [1, "RestApiError"],
    GcpApiError: [1, "GcpApiError"],
    GcpCredentialsError: [1, "GcpCredentialsError"],
    KubeconfigError: [1, "KubeconfigError"],
    KubeApiError: [1, "KubeApiError"],
    RetryInterrupted: [1, "RetryInterrupted"],
    FramingError: [1, "FramingError"],
};
const UNCATALOGUED = new Set<string>();

function sources(dir: string): string[] {
    return fs.readdirSync(path.join(PACKAGE_ROOT, dir), { withFileTypes: true }).flatMap((d) => {
        const p = `${dir}/${d.name}`;
        return d.isDirectory() ? sources(p) : d.name.endsWith(".ts") ? [p] : [];
    });
}

/** Every error class written in src/ and components/ (`class X extends …Error`, and subclasses of those), by file. */
function errorClasses(): { file: string; name: string; cls: new (...a: never[]) => Error }[] {
    const found: { file: string; name: string; cls: new (...a: never[]) => Error }[] = [];
    for (const file of [...sources("src"), ...sources("components")]) {
        const text = fs.readFileSync(path.join(PACKAGE_ROOT, file), "utf8");
        for (const m of text.matchAll(/^export (?:abstract )?class (\w+) extends (\w+)/gm)) {
            // Built next to the sources under dist/ (tsconfig outDir), as this test is.
            const mod = require(path.join(PACKAGE_ROOT, "dist", file.replace(/\.ts$/, ".js")));
            const cls = mod[m[1]];
            if (typeof cls === "function" && cls.prototype instanceof Error) found.push({ file, name: m[1], cls });
        }
    }
    return found;
}

/** The entry a class declares itself (not one it inherits), read without constructing one. */
function ownEntry(cls: { prototype: object }, instance: object = Object.create(cls.prototype)): CatalogueEntry {
    const get = Object.getOwnPropertyDescriptor(cls.prototype, "catalogue")?.get;
    assert.ok(get, "declares no `catalogue` of its own");
    return get.call(instance);
}

test("every error class declares its own exit code and --json type, the ones it always had", () => {
    const classes = errorClasses();
    assert.ok(classes.length >= Object.keys(EXPECTED).length, `found ${classes.length} classes`);
    const codes = new Set<number>(Object.values(EXIT));
    const seen: Record<string, [number, string]> = {};
    for (const { file, name, cls } of classes) {
        if (UNCATALOGUED.has(`${file}:${name}`)) continue;
        const e = ownEntry(cls);
        assert.ok(codes.has(e.exitCode) && e.exitCode !== EXIT.ok, `${file}: ${name} exits ${e.exitCode}`);
        assert.ok(typeof e.type === "string" && e.type.length > 0, `${file}: ${name} has no type`);
        seen[name] = [e.exitCode, e.type];
    }
    assert.deepEqual(seen, EXPECTED);
});

test("exitCodeOf and the --json type read the instance's entry; anything else is a failed command", () => {
    assert.equal(exitCodeOf(new ConfigError([])), EXIT.invalid);
    assert.equal(exitCodeOf(new UsageError("bad flag")), EXIT.invalid);
    assert.equal(catalogueOf(new UsageError("bad flag"))?.type, new UsageError("x").name);
    assert.equal(exitCodeOf(new EngineError("up", "boom")), EXIT.failed);
    const down = new EngineError("up", "boom", new BackendUnreachableError("postgres://h/db", "refused"));
    assert.equal(exitCodeOf(down), EXIT.unavailable);
    for (const other of [new Error("x"), new TypeError("x"), "a string", undefined, null, { catalogue: 2 }])
        assert.equal(exitCodeOf(other), EXIT.failed, String(other));
    // Not an own field: pino's error serializer and JSON.stringify print an error as they always did.
    assert.equal(Object.keys(new ConfigError([])).includes("catalogue"), false);
    assert.equal(JSON.stringify(new UsageError("u")), "{}");
});

test("docs/operations.md's exit-code table lists each code with exactly the types the catalogue gives it", () => {
    const md = fs.readFileSync(path.join(PACKAGE_ROOT, "docs/operations.md"), "utf8");
    const rows = [...md.matchAll(/^\| (\d+) \| [^|]+ \|([^|\n]*)\|$/gm)];
    const documented = new Map(
        rows.map((m) => [Number(m[1]), new Set([...m[2].matchAll(/`(\w+)`/g)].map((t) => t[1]))]),
    );
    assert.deepEqual([...documented.keys()], Object.values(EXIT));
    const byCode = new Map<number, Set<string>>(Object.values(EXIT).map((c) => [c, new Set<string>()]));
    for (const [code, type] of Object.values(EXPECTED)) byCode.get(code)!.add(type);
    // EngineError's code depends on the instance: 75 when its cause was the backend being unreachable.
    byCode.get(EXIT.unavailable)!.add(ownEntry(EngineError, { backendUnreachable: true }).type);
    assert.deepEqual(documented, byCode);
});
