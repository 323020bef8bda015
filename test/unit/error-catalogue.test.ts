/**
 * The service's one error catalogue (src/service/http/catalogue.ts): every code has one status, the
 * OpenAPI document lists exactly its codes, docs/api.md's table says the same, and no code sits in the
 * catalogue that the service never answers with.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { ERRORS, ERROR_CODES, gatewayStatusOf } from "../../src/service/http/catalogue";
import { HttpError } from "../../src/service/http/errors";
import { openapiDocument } from "../../src/service/api/openapi";
import { PACKAGE_ROOT } from "../../src/engine/env";

const sources = (dir: string): string[] =>
    fs.readdirSync(path.join(PACKAGE_ROOT, dir), { withFileTypes: true }).flatMap((d) => {
        const p = `${dir}/${d.name}`;
        return d.isDirectory() ? sources(p) : d.name.endsWith(".ts") ? [p] : [];
    });

test("every code has a 4xx/5xx status; HttpError takes it from the catalogue", () => {
    for (const [code, e] of Object.entries(ERRORS)) {
        assert.ok(e.status >= 400 && e.status < 600, `${code}: ${e.status}`);
        assert.equal(new HttpError(code as keyof typeof ERRORS, "m").status, e.status, code);
    }
    assert.equal(gatewayStatusOf("unauthenticated"), 407);
    assert.equal(gatewayStatusOf("forbidden"), 407);
    assert.equal(gatewayStatusOf("none_available"), 503);
    assert.equal(new HttpError("bad_request", "m", undefined, undefined, 405).status, 405, "a parser's own 4xx");
});

test("the OpenAPI Error schema lists exactly the catalogue's codes", () => {
    const doc = openapiDocument("contract") as { components: { schemas: Record<string, any> } };
    assert.deepEqual(doc.components.schemas.Error.properties.error.properties.code.enum, ERROR_CODES);
});

test("docs/api.md has one table row per code, with its status", () => {
    const md = fs.readFileSync(path.join(PACKAGE_ROOT, "docs/api.md"), "utf8");
    const rows = [...md.matchAll(/^\| `([a-z_]+)` \| (\d{3})(?: \(gateway (\d{3})\))? \|/gm)].map((m) => [
        m[1],
        Number(m[2]),
        m[3] ? Number(m[3]) : undefined,
    ]);
    assert.deepEqual(
        rows,
        Object.entries(ERRORS).map(([c, e]) => [c, e.status, (e as { gateway?: number }).gateway]),
    );
});

test("every code in the catalogue is answered somewhere in src/service", () => {
    const text = sources("src/service")
        .filter((f) => !f.endsWith("http/catalogue.ts"))
        .map((f) => fs.readFileSync(path.join(PACKAGE_ROOT, f), "utf8"))
        .join("\n");
    const unused = ERROR_CODES.filter((c) => !text.includes(`"${c}"`));
    assert.deepEqual(unused, []);
});
