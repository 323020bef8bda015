/**
 * The API contract's document: every route Express serves is in /v1/openapi.json and every documented
 * route is served (prints the OpenAPI coverage count: routes documented / routes served), and the document
 * a real service serves (test/helpers/openapi-service.ts) is OpenAPI 3.1 with a scope per operation and the
 * error shape on every error. Real answers validated against it: openapi.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createApp, servedRoutes } from "../../src/service/api/app";
import type { AppDeps } from "../../src/service/api/deps";
import { createLogger } from "../../src/log/logger";
import { OPERATIONS } from "../../src/service/api/openapi";
import type { OpenApiDoc } from "../helpers/openapi-check";
import { withOpenApiService } from "../helpers/openapi-service";

let doc: OpenApiDoc;
withOpenApiService((made) => ({ doc } = made));

test("every route Express serves is documented, and every documented route is served", () => {
    const silent = createLogger({ level: "silent" });
    // Routes are registered when the app is built, whatever the deps hold: only auth and log are called then.
    const listener = createApp({
        log: silent,
        auth: () => (_req: unknown, _res: unknown, next: () => void) => next(),
    } as unknown as AppDeps);
    const served = servedRoutes(listener).map((r) => `${r.method.toUpperCase()} ${r.path.replace(/:(\w+)/g, "{$1}")}`);
    const documented = new Set(OPERATIONS.map((o) => `${o.method.toUpperCase()} ${o.path}`));
    const undocumented = served.filter((r) => !documented.has(r));
    const unserved = [...documented].filter((d) => !served.includes(d));
    console.log(
        `OpenAPI coverage: ${served.length - undocumented.length}/${served.length} routes served are documented (${documented.size} operations in the document)`,
    );
    assert.deepEqual(undocumented, [], "served but not in /v1/openapi.json");
    assert.deepEqual(unserved, [], "documented but not served");
    assert.ok(served.length >= 17, `the walk found the routes (${served.length})`);
});

test("the document is OpenAPI 3.1 with a bearer scheme per scope and the error shape on every error", () => {
    const d = doc as any;
    assert.equal(d.openapi, "3.1.0");
    assert.deepEqual(Object.keys(d.components.securitySchemes).sort(), [
        "adminToken",
        "discoverToken",
        "leaseToken",
        "scaleToken",
    ]);
    for (const [path, item] of Object.entries(doc.paths))
        for (const [method, op] of Object.entries(item)) {
            for (const [status, res] of Object.entries<any>(op.responses)) {
                if (Number(status) >= 400)
                    assert.equal(
                        res.content?.["application/json"]?.schema?.$ref,
                        "#/components/schemas/Error",
                        `${method} ${path} ${status}`,
                    );
                assert.ok(res.content, `${method} ${path} ${status} documents its body`);
            }
            const scope = op["x-egress-scope"];
            if (scope === "any") {
                // Any valid token (GET /v1/whoami): never forbidden, only unauthenticated.
                assert.ok(op.responses["401"] && !op.responses["403"], `${method} ${path}: 401, no 403`);
                assert.equal(op.security.length, 4, `${method} ${path} accepts every scope's token`);
            } else if (scope) {
                assert.ok(op.responses["401"] && op.responses["403"], `${method} ${path}: 401 and 403`);
                assert.ok(
                    op.security.some((s: object) => `${scope}Token` in s),
                    `${method} ${path} needs ${scope}`,
                );
            } else assert.deepEqual(op.security, [], `${method} ${path} is public`);
        }
});
