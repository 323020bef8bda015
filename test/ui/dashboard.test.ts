/**
 * The dashboard end to end: a real `egress serve` with real local proxies, driven through headless
 * Chromium. Logs in, sees 3 healthy proxies, scales to 5 in the UI and follows the operation's progress
 * until 5 are healthy, sees a SIGKILLed proxy turn unhealthy (self-healing is off, so it stays so),
 * and with a discover-only token finds no scale control. Screenshots go to a temp dir (or
 * EGRESS_UI_SCREENSHOTS) and are checked by structure (outline.ts), not by pixels. Also measures the
 * first load: bytes transferred and time to interactive.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { Browser, Page } from "playwright-core";
import {
    ADMIN_TOKEN,
    cli,
    killServices,
    procProject,
    ProcProject,
    proxyProcesses,
    serve,
    ServeProcess,
} from "../helpers/processes";
import { activeLeasesSchema, poolSchema, timelineSchema, whoamiSchema } from "../../src/service/api/schemas";
import { firstLoad, launchChromium, login, outline } from "./browser";
import { waitFor } from "../helpers/harness";

const VIEWER_TOKEN = "tok-ui-viewer-0123456789abcdef";
const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 3, maxReplicas: 6 }],
};
const shots = process.env.EGRESS_UI_SCREENSHOTS ?? fs.mkdtempSync(path.join(os.tmpdir(), "egress-ui-shots-"));
let p: ProcProject;
let svc: ServeProcess;
let browser: Browser;

before(async () => {
    browser = await launchChromium(); // first: a missing chromium fails before anything starts
    p = procProject("ui", config, { EGRESS_TOKENS: `admin:admin:${ADMIN_TOKEN},viewer:discover:${VIEWER_TOKEN}` });
    svc = await serve(p, ["--timeline-interval", "1"]);
});
after(async () => {
    await browser?.close();
    killServices();
    if (p) {
        cli(p, ["destroy", "--yes", "--quiet"]);
        assert.deepEqual([...proxyProcesses(p).keys()], [], "destroy leaves no proxy running");
        p.cleanup();
    }
});

const get = (route: string, headers: Record<string, string> = {}) => fetch(`${svc.url}${route}`, { headers });

async function shot(page: Page, name: string, expected: string[]): Promise<void> {
    await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
    assert.deepEqual(await outline(page), expected, `structure of ${name}.png`);
}

const healthyRows = (page: Page, n: number) =>
    waitFor(
        `${n} healthy proxies in the Proxies table`,
        async () =>
            (await page.locator("tbody tr").count()) === n &&
            (await page.locator("tbody tr .badge.healthy").count()) === n,
        120_000,
        200,
    );

const NAV_ADMIN = "nav Pages: Pools | Proxies | Operations | Provider health | Active leases";
const POOLS_HEAD = "table: Pool | Provider | Desired | Actual | Healthy | Leased | Draining";

test("static assets and pages need no token, data does; unknown routes: the app's 404 page under /, JSON under /v1", async () => {
    const index = await get("/");
    assert.equal(index.status, 200);
    assert.match(index.headers.get("content-type") ?? "", /text\/html/);
    assert.match(index.headers.get("content-security-policy") ?? "", /script-src 'self'/);
    assert.equal((await get("/assets/app.js")).status, 200);
    assert.equal((await get("/proxies")).status, 200);
    const missing = await get("/no/such/page", { accept: "text/html,application/xhtml+xml,*/*;q=0.8" });
    assert.equal(missing.status, 404);
    assert.match(missing.headers.get("content-type") ?? "", /text\/html/);
    const missingForApi = await get("/no/such/page");
    assert.equal(missingForApi.status, 404);
    assert.equal(
        ((await missingForApi.json()) as any).error.code,
        "not_found",
        "a client that does not ask for HTML keeps the JSON 404",
    );
    const api404 = await get("/v1/no-such-route", { authorization: `Bearer ${ADMIN_TOKEN}` });
    assert.equal(api404.status, 404);
    assert.equal(((await api404.json()) as any).error.code, "not_found");
    for (const route of ["/v1/whoami", "/v1/timeline", "/v1/leases", "/v1/pools"])
        assert.equal((await get(route)).status, 401, `${route} needs a token`);
    // The new read routes answer what their schemas say.
    const auth = (t: string) => ({ authorization: `Bearer ${t}` });
    assert.deepEqual(whoamiSchema.parse((await (await get("/v1/whoami", auth(VIEWER_TOKEN))).json()) as unknown), {
        name: "viewer",
        scopes: ["discover"],
    });
    timelineSchema.parse(await (await get("/v1/timeline", auth(VIEWER_TOKEN))).json());
    activeLeasesSchema.parse(await (await get("/v1/leases", auth(VIEWER_TOKEN))).json());
    const pools = (await (await get("/v1/pools", auth(VIEWER_TOKEN))).json()) as { pools: unknown[] };
    for (const pool of pools.pools) poolSchema.parse(pool);
});

test(
    "the dashboard: log in, 3 healthy, scale to 5 with live progress, a killed proxy turns unhealthy, a discover-only token cannot scale",
    { timeout: 360_000 },
    async (t) => {
        const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
        // First load, cold: bytes over the wire and time until the login form takes input.
        const load = await firstLoad(context, `${svc.url}/`, 'input[type="password"]');
        const page = load.page;
        const pageErrors: string[] = [];
        page.on("pageerror", (e) => pageErrors.push(e.message));
        assert.ok(
            load.bytes > 0 && load.requests >= 3 && load.interactiveMs > 0,
            `first load counted: ${load.requests} requests, ${load.bytes} bytes, ${load.interactiveMs} ms`,
        );
        t.diagnostic(
            `dashboard first load: ${load.requests} requests, ${load.bytes} bytes transferred, interactive after ${load.interactiveMs} ms`,
        );
        console.log(
            `[measure] dashboard first load: ${load.requests} requests, ${load.bytes} bytes transferred, interactive after ${load.interactiveMs} ms`,
        );
        await shot(page, "login", ["main", "h1 egress", "form Log in"]);

        // A wrong token: a readable message, still on the login page.
        await page.getByLabel("API token").fill("not-a-valid-token-at-all");
        await page.getByRole("button", { name: "Log in" }).click();
        await page.getByRole("alert").filter({ hasText: "invalid bearer token" }).waitFor();

        await login(page, ADMIN_TOKEN);
        await page.getByRole("link", { name: "Proxies" }).click();
        await healthyRows(page, 3);
        await shot(page, "proxies-3", [
            "header",
            "h1 egress",
            NAV_ADMIN,
            "main",
            "h2 Proxies",
            "form Filter proxies",
            "table: Proxy | Pool | Address | Health | Egress IP | Probe latency | Lease | Lifecycle | Last error",
        ]);
        assert.equal(
            await page
                .locator("tbody tr td")
                .filter({ hasText: /^\d+\.\d ms$/ })
                .count(),
            3,
            "every proxy shows its probe latency",
        );
        assert.equal(
            (await page.locator("tbody tr td").filter({ hasText: "127.0.0.1" }).count()) >= 3,
            true,
            "egress IPs are shown",
        );

        // Scale to 5 in the UI and follow the operation.
        await page.getByRole("link", { name: "Pools" }).click();
        await page.getByLabel("Replicas for web").fill("5");
        await page.getByRole("button", { name: "Scale" }).click();
        const op = page.getByRole("region", { name: /^Operation op_/ });
        await op.waitFor();
        await waitFor(
            "the operation's resources in the progress table",
            async () => (await op.locator("tbody tr td .badge").count()) > 0,
            120_000,
            100,
        );
        await op.locator("h3 .badge.succeeded").waitFor({ timeout: 180_000 });
        const resources = await op.locator("tbody tr th, tbody tr td:first-child").allTextContents();
        assert.ok(
            resources.some((r) => /web-4/.test(r)),
            `progress named the new member web-4: ${resources.join(", ")}`,
        );
        await waitFor(
            "5 healthy in the Pools table",
            async () => (await page.locator('tr[data-pool="web"] .healthy-count').textContent()) === "5",
            120_000,
            200,
        );
        assert.deepEqual(
            (await page.locator('tr[data-pool="web"] > *').allTextContents()).slice(0, 7),
            ["web", "local", "5", "5", "5", "0", "0"],
            "name, provider, desired, actual, healthy, leased, draining",
        );
        await waitFor(
            "the timeline to have samples, the last with 5 healthy",
            async () =>
                (await page.locator(".timeline circle").count()) > 1 &&
                /5 healthy and 0 leased now/.test(
                    (await page.locator(".timeline svg").getAttribute("aria-label")) ?? "",
                ),
            30_000,
            200,
        );
        await shot(page, "pools-5", [
            "header",
            "h1 egress",
            NAV_ADMIN,
            "main",
            "h2 Pools",
            `${POOLS_HEAD} | Scale`,
            "form scale",
            "h3 Operation op_…",
            "table: Resource | Type | Step | State",
            "h2 Last hour",
            "chart",
        ]);
        await page.getByRole("link", { name: "Proxies" }).click();
        await healthyRows(page, 5);
        await shot(page, "dashboard", [
            "header",
            "h1 egress",
            NAV_ADMIN,
            "main",
            "h2 Proxies",
            "form Filter proxies",
            "table: Proxy | Pool | Address | Health | Egress IP | Probe latency | Lease | Lifecycle | Last error",
        ]);

        // The other pages: a lease taken through the API shows (without its id), the provider check, and
        // the scale operation's progress replayed from the Operations page.
        const lease = (await svc.call("POST", "/v1/leases", { body: { pool: "web", target: "shop.example" } })).body
            .lease;
        await page.getByRole("link", { name: "Active leases" }).click();
        await page.locator("tbody tr").filter({ hasText: "shop.example" }).waitFor();
        assert.ok(!(await page.content()).includes(lease.id), "lease ids are not rendered");
        await shot(page, "leases", [
            "header",
            "h1 egress",
            NAV_ADMIN,
            "main",
            "h2 Active leases",
            "table: Proxy | Pool | Target | Leased | Expires",
        ]);
        assert.equal(
            (await svc.call("POST", `/v1/leases/${lease.id}/release`, { body: { outcome: "ok" } })).status,
            200,
        );
        await page.getByRole("link", { name: "Provider health" }).click();
        await page.locator("tbody tr").filter({ hasText: "local" }).first().waitFor();
        await shot(page, "providers", [
            "header",
            "h1 egress",
            NAV_ADMIN,
            "main",
            "h2 Provider health",
            "table: Provider | Kind | Target | State | Since | Message",
            "h2 Cluster",
            "table: Replica | Role | Host | Address | Version | Last heartbeat | Scope",
        ]);
        await page.getByRole("link", { name: "Operations" }).click();
        await page.locator("tbody tr").filter({ hasText: "web → 5" }).getByRole("button").click();
        const replay = page.getByRole("region", { name: /^Operation op_/ });
        await replay.locator("h3 .badge.succeeded").waitFor();
        await waitFor(
            "the replayed progress to name web-4",
            async () => (await replay.locator("tbody tr td:first-child").allTextContents()).includes("web-4"),
            10_000,
            100,
        );
        await shot(page, "operations", [
            "header",
            "h1 egress",
            NAV_ADMIN,
            "main",
            "h2 Operations",
            "table: Operation | Kind | Status | Desired | Created | Error",
            "h3 Operation op_…",
            "table: Resource | Type | Step | State",
        ]);

        // Kill one proxy: the table turns it unhealthy with its last error (no self-healing in this service).
        // Process ids carry the stack (`ui-web-1`); the dashboard shows the member id.
        const running = proxyProcesses(p);
        const pid = running.get("ui-web-1");
        assert.ok(pid, `web-1 runs (running: ${[...running.keys()].join(", ")})`);
        process.kill(pid, "SIGKILL");
        await page.getByRole("link", { name: "Proxies" }).click();
        const row = page.locator('tr[data-proxy="web-1"]');
        await row.locator(".badge.unhealthy").waitFor({ timeout: 60_000 });
        assert.notEqual((await row.locator(".last-error").textContent())?.trim(), "", "the last error is shown");
        await page.getByLabel("Health").selectOption("unhealthy");
        await waitFor(
            "the health filter to leave web-1 alone",
            async () =>
                (await page.locator("tbody tr").count()) === 1 &&
                (await page.locator('tr[data-proxy="web-1"]').count()) === 1,
            10_000,
            100,
        );
        await shot(page, "proxies-unhealthy", [
            "header",
            "h1 egress",
            NAV_ADMIN,
            "main",
            "h2 Proxies",
            "form Filter proxies",
            "table: Proxy | Pool | Address | Health | Egress IP | Probe latency | Lease | Lifecycle | Last error",
        ]);

        // Unknown page: the app's 404 page. A token refused mid-session: back to login with a notice.
        await page.goto(`${svc.url}/no/such/page`);
        await page.getByRole("heading", { name: "Page not found" }).waitFor();
        await page.getByRole("link", { name: "Back to pools" }).click();
        await page.locator('tr[data-pool="web"]').waitFor();
        // The token stops being accepted mid-session (as when it is revoked): the next poll's 401 returns to login.
        await page.evaluate(() =>
            (globalThis as any).sessionStorage.setItem("egress.token", "revoked-token-0123456789abcdef"),
        );
        await page.getByText("Your session ended (the token was refused). Log in again.").waitFor({ timeout: 10_000 });
        assert.equal(await page.getByLabel("API token").count(), 1, "a 401 returns to login");

        // Discover-only: no scale control, no Operations page.
        await login(page, VIEWER_TOKEN);
        await page.getByRole("link", { name: "Pools" }).click();
        await page.locator('tr[data-pool="web"]').waitFor();
        assert.equal(await page.getByRole("button", { name: "Scale" }).count(), 0, "no scale control without `scale`");
        await shot(page, "pools-viewer", [
            "header",
            "h1 egress",
            "nav Pages: Pools | Proxies | Provider health | Active leases",
            "main",
            "h2 Pools",
            POOLS_HEAD,
            "h2 Last hour",
            "chart",
        ]);
        assert.ok(
            !(await page.content()).includes(ADMIN_TOKEN) && !(await page.content()).includes(VIEWER_TOKEN),
            "no token is rendered",
        );
        assert.deepEqual(pageErrors, [], "no script errors in the page");
        t.diagnostic(`screenshots in ${shots}`);
        await context.close();
    },
);
