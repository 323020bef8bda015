/**
 * /docs in a real browser (Debian's chromium driven by playwright-core): swagger-ui renders every
 * operation of the document without a token, and the page loads nothing from anywhere but the service.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { OPERATIONS } from "../../src/service/api/openapi";
import { EMPTY_LOCAL_POOL, startTestService, TestService } from "../helpers/service";

const CHROMIUM = process.env.EGRESS_CHROMIUM ?? "/usr/bin/chromium";
let svc: TestService;
let browser: Browser;
before(async () => {
    assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: install Debian's chromium (or set EGRESS_CHROMIUM)`);
    svc = await startTestService(EMPTY_LOCAL_POOL, { converge: false });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
});
after(async () => {
    await browser?.close();
    await svc?.close();
});

test(
    "swagger-ui at /docs shows every documented operation, served locally, without a token",
    { timeout: 60_000 },
    async () => {
        const page = await browser.newPage();
        const requested: string[] = [];
        page.on("request", (r) => requested.push(r.url()));
        const res = await page.goto(`${svc.url}/docs`);
        assert.equal(res?.status(), 200);
        await page.waitForSelector(".opblock-summary-path", { timeout: 30_000 });
        const shown = await page.$$eval(".opblock-summary", (els) =>
            els.map(
                (e) =>
                    `${e.querySelector(".opblock-summary-method")?.textContent} ${e.querySelector(".opblock-summary-path")?.textContent}`,
            ),
        );
        assert.deepEqual(shown.sort(), OPERATIONS.map((o) => `${o.method.toUpperCase()} ${o.path}`).sort());
        assert.deepEqual(
            requested.filter((u) => !u.startsWith(`${svc.url}/`)),
            [],
            "nothing from a CDN or elsewhere",
        );
        assert.ok(requested.includes(`${svc.url}/v1/openapi.json`));
    },
);
