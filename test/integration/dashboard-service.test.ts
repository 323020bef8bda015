/**
 * The service side of the dashboard without a browser: the timeline's ring (last hour, oldest first),
 * whoami for a token with any scope, and the static routes when the bundle is missing or present.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import express from "express";
import { Timeline } from "../../src/service/fleet/timeline";
import { authenticate, sha256 } from "../../src/service/http/auth";
import { errorHandler, notFound } from "../../src/service/http/errors";
import { uiRoutes } from "../../src/service/api/routes/ui";
import type { PoolCounts } from "../../src/service/fleet/fleet";

const counts = (healthy: number): Record<string, PoolCounts> => ({
    web: { actual: 3, healthy, unhealthy: 3 - healthy, unknown: 0, leased: 1, draining: 0 },
});

test("the timeline keeps span/interval samples, oldest first, and drops the oldest when full", () => {
    let now = Date.parse("2026-01-01T00:00:00Z"),
        healthy = 0;
    const t = new Timeline({ intervalMs: 30_000, spanMs: 90_000, counts: () => counts(healthy), now: () => now });
    assert.deepEqual(t.points(), []);
    for (healthy = 0; healthy < 5; healthy++, now += 30_000) t.sample();
    const pts = t.points();
    assert.equal(pts.length, 3, "90 s / 30 s = 3 samples kept");
    assert.deepEqual(
        pts.map((p) => p.pools.web.healthy),
        [2, 3, 4],
    );
    assert.deepEqual(
        pts.map((p) => p.at),
        ["2026-01-01T00:01:00.000Z", "2026-01-01T00:01:30.000Z", "2026-01-01T00:02:00.000Z"],
    );
    assert.deepEqual(pts[0].pools.web, { healthy: 2, leased: 1 });
    assert.throws(
        () => new Timeline({ intervalMs: 0, counts: () => ({}) }),
        /timeline interval must be a whole number of ms/,
    );
});

async function listen(app: express.Express): Promise<{ url: string; close: () => void }> {
    const server = http.createServer(app);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, close: () => server.close() };
}

test("no scope admits any valid token (whoami); a bad token is still refused", async () => {
    const auth = authenticate([
        { name: "crawler", sha256: sha256("lease-only-token-0123456789").toString("hex"), scopes: ["lease"] },
    ]);
    const app = express();
    app.get("/who", auth(), (req, res) => res.json({ name: (req as any).tokenName, scopes: (req as any).tokenScopes }));
    app.get("/scale", auth("scale"), (_req, res) => res.json({}));
    app.use(errorHandler);
    const s = await listen(app);
    try {
        const h = (t: string) => ({ headers: { authorization: `Bearer ${t}` } });
        assert.deepEqual(await (await fetch(`${s.url}/who`, h("lease-only-token-0123456789"))).json(), {
            name: "crawler",
            scopes: ["lease"],
        });
        assert.equal((await fetch(`${s.url}/who`, h("wrong-token-0123456789abcdef"))).status, 401);
        assert.equal((await fetch(`${s.url}/scale`, h("lease-only-token-0123456789"))).status, 403);
    } finally {
        s.close();
    }
});

test("static routes: a missing bundle answers 503 naming the build; a built one serves pages, assets and a browser 404", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-ui-"));
    const app = express();
    app.use(uiRoutes(dir));
    app.use(notFound);
    app.use(errorHandler);
    const s = await listen(app);
    const html = { headers: { accept: "text/html" } };
    try {
        const missing = await fetch(`${s.url}/`, html);
        assert.equal(missing.status, 503);
        assert.match(((await missing.json()) as any).error.message, /dashboard is not built .*npm run build/);
        fs.mkdirSync(path.join(dir, "assets"));
        fs.writeFileSync(path.join(dir, "index.html"), "<!doctype html><title>t</title>");
        fs.writeFileSync(path.join(dir, "assets", "app.js"), "console.log(1)");
        assert.equal((await fetch(`${s.url}/proxies`, html)).status, 200);
        assert.match((await fetch(`${s.url}/`)).headers.get("content-security-policy") ?? "", /default-src 'none'/);
        assert.equal((await fetch(`${s.url}/assets/app.js`)).status, 200);
        assert.equal((await fetch(`${s.url}/elsewhere`, html)).status, 404);
        assert.match((await fetch(`${s.url}/elsewhere`, html)).headers.get("content-type") ?? "", /text\/html/);
        const api = await fetch(`${s.url}/v1/anything`, html);
        assert.equal(api.status, 404);
        assert.equal(
            ((await api.json()) as any).error.code,
            "not_found",
            "under /v1 a 404 stays JSON, even for a browser",
        );
        assert.equal((await fetch(`${s.url}/elsewhere`, { method: "POST" })).status, 404);
    } finally {
        s.close();
        fs.rmSync(dir, { recursive: true, force: true });
    }
});
