/**
 * The dashboard's fleet policy panel (issue 20), through headless Chromium against a real `egress
 * serve`: an autoscaled pool shows its bounds, what the last round saw and its decision once a held
 * lease pushes utilization past target; a rotating pool shows its period and, once a member aged out,
 * the member its last rotation replaced. A fleet with neither shows no panel (test/ui/dashboard.test.ts
 * checks the Pools page's structure without it).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { Browser } from "playwright-core";
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
import { launchChromium, login, outline } from "./browser";
import { waitFor } from "../helpers/harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [
        {
            name: "auto",
            provider: "local",
            replicas: 1,
            maxReplicas: 3,
            autoscale: { min: 1, max: 3, targetUtilization: 0.5, scaleDownAfterSeconds: 600, cooldownSeconds: 2 },
        },
        // 20 s is below the floor of 60 s: the documented test override lowers it for this service only.
        { name: "rot", provider: "local", replicas: 1, maxReplicas: 3, rotateAfterSeconds: 20 },
    ],
};
let p: ProcProject;
let svc: ServeProcess;
let browser: Browser;

before(async () => {
    browser = await launchChromium();
    p = procProject("ui-policy", config, { EGRESS_TEST_MIN_ROTATE_SECONDS: "5" });
    svc = await serve(p, ["--autoscale-interval", "0.5", "--autoscale-window", "2", "--rotate-interval", "1"]);
});
after(async () => {
    await browser?.close();
    killServices();
    if (p) {
        const d = cli(p, ["destroy", "--yes", "--quiet"]);
        assert.equal(d.code, 0, `destroy: ${d.stderr}`);
        assert.deepEqual([...proxyProcesses(p).keys()], [], "destroy leaves no proxy running");
        p.cleanup();
    }
});

test(
    "fleet policy panel: autoscale bounds, signal and decision; rotation period and the member it replaced",
    { timeout: 240_000 },
    async () => {
        const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
        const pageErrors: string[] = [];
        page.on("pageerror", (e) => pageErrors.push(e.message));
        await page.goto(`${svc.url}/`);
        await login(page, ADMIN_TOKEN);
        const auto = page.locator('tr[data-policy="autoscale-auto"]');
        const rot = page.locator('tr[data-policy="rotation-rot"]');
        await auto.waitFor({ timeout: 60_000 });
        assert.deepEqual(
            (await auto.locator("th, td").allTextContents()).slice(0, 2),
            ["auto", "1–3, target 50%"],
            "the pool and its bounds",
        );
        assert.deepEqual((await rot.locator("th, td").allTextContents()).slice(0, 2), ["rot", "every 20 s, surge 1"]);

        // One held lease on a pool of 1 is utilization 100% against a target of 50%: the autoscaler wants 2.
        await waitFor(
            "auto-0 leasable",
            async () => {
                const r = await fetch(`${svc.url}/v1/leases`, {
                    method: "POST",
                    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
                    body: JSON.stringify({ pool: "auto" }),
                });
                return r.status === 201 || r.status === 200;
            },
            60_000,
            250,
        );
        await waitFor(
            "the autoscale decision 1 → 2 on the panel",
            async () => /^1 → 2\b/.test(((await auto.locator("td").nth(2).textContent()) ?? "").trim()),
            60_000,
            250,
        );
        assert.match((await auto.locator("td").nth(1).textContent()) ?? "", /used \(.* of .*\).*wants 2/);

        // rot-0 is due 18–20 s after its creation (its jitter); the panel then names it as the member replaced.
        await waitFor(
            "the last rotation on the panel, naming rot-0",
            async () => /rot-0 \(age/.test((await rot.locator("td").nth(2).textContent()) ?? ""),
            120_000,
            250,
        );
        assert.deepEqual(await outline(page), [
            "header",
            "h1 egress",
            "nav Pages: Pools | Proxies | Operations | Provider health | Active leases",
            "main",
            "h2 Pools",
            "table: Pool | Provider | Desired | Actual | Healthy | Leased | Draining | Scale",
            "form scale",
            "h2 Fleet policy",
            "table: Pool | Bounds | Signal | Last decision",
            "table: Pool | Policy | Next | Last rotation",
            "h2 Last hour",
            "chart",
            "chart",
        ]);
        assert.deepEqual(pageErrors, []);
    },
);
