/**
 * The dashboard's first load in headless Chromium (Debian's, through playwright-core): bytes
 * transferred and time to interactive, cold (a fresh browser context per load, so no cache).
 * Side by side with a peer, swagger-ui (swagger-ui-dist, served locally against this service's OpenAPI
 * document: the kind of operator page other tools ship), and a ceiling, one tiny HTML page from bare
 * node:http. "Interactive" = the page's first control is in the DOM: the login's token field, swagger's
 * rendered title, the ceiling's paragraph; the page's own performance.now() when that element first
 * appears (a MutationObserver installed before the page's scripts), i.e. from navigation start.
 *
 *   npx tsc -p . && node scripts/build-ui.mjs && node dist/bench/dashboard-load.js [--loads 10]
 */
import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import express from "express";
import type { Browser } from "playwright-core";
import { firstLoad, launchChromium } from "../test/ui/browser";
import { openapiDocument } from "../src/service/api/openapi";
import { randomToken, startSyntheticService } from "./synthetic-service";
import { benchTable } from "./table";

const loads = Number(process.argv[process.argv.indexOf("--loads") + 1]) || 10;

async function listen(handler: http.RequestListener): Promise<{ url: string; server: http.Server }> {
    const server = http.createServer(handler);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server };
}

/** swagger-ui-dist's own page, its initializer pointed at a local document (the stock one fetches petstore.swagger.io). */
function swaggerPeer(): http.RequestListener {
    const dist = path.dirname(require.resolve("swagger-ui-dist/package.json"));
    const app = express();
    app.get("/openapi.json", (_req, res) => res.json(openapiDocument("bench")));
    app.get("/swagger-initializer.js", (_req, res) =>
        res
            .type("js")
            .send(
                `window.onload = () => { window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#swagger-ui", presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: "StandaloneLayout" }); };`,
            ),
    );
    app.use(express.static(dist));
    return app;
}

async function measure(
    browser: Browser,
    url: string,
    ready: string,
): Promise<{ bytes: number; requests: number; ms: number }> {
    const context = await browser.newContext();
    try {
        const r = await firstLoad(context, url, ready);
        return { bytes: r.bytes, requests: r.requests, ms: r.interactiveMs };
    } finally {
        await context.close();
    }
}

const pct = (xs: number[], p: number) =>
    [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

async function main(): Promise<void> {
    if (!fs.existsSync(path.join(__dirname, "..", "ui", "index.html")))
        throw new Error("dist/ui is missing: run `node scripts/build-ui.mjs` (or npm run build) first");
    const browser = await launchChromium();
    const svc = await startSyntheticService({ token: randomToken(), members: 3, pools: 1 });
    const peer = await listen(swaggerPeer());
    const ceiling = await listen((_req, res) =>
        res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>ceiling</title><p>ready</p>"),
    );
    const rows: string[][] = [];
    try {
        for (const [name, url, ready] of [
            ["egress dashboard (login page)", `http://127.0.0.1:${svc.port}/`, 'input[type="password"]'],
            ["peer: swagger-ui-dist 5, local", `${peer.url}/index.html`, ".swagger-ui .info .title"],
            ["ceiling: one tiny HTML page", `${ceiling.url}/`, "p"],
        ] as const) {
            await measure(browser, url, ready); // warm-up: the browser process, not the page, pays first-use costs
            const runs = [];
            for (let i = 0; i < loads; i++) runs.push(await measure(browser, url, ready));
            rows.push([
                name,
                String(runs[0].requests),
                (runs[0].bytes / 1024).toFixed(1),
                pct(
                    runs.map((r) => r.ms),
                    50,
                ).toFixed(0),
                pct(
                    runs.map((r) => r.ms),
                    90,
                ).toFixed(0),
            ]);
        }
    } finally {
        await browser.close();
        svc.server.close();
        peer.server.close();
        ceiling.server.close();
    }
    console.log(`First load, cold, headless Chromium (${loads} loads each, after one warm-up)`);
    console.log(benchTable(["page", "requests", "KiB transferred", "interactive ms p50", "p90"], rows));
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
