/**
 * The dashboard in a real browser: Debian's chromium driven by playwright-core (never a downloaded
 * browser). A missing chromium fails the test, naming the package to install.
 */
import * as fs from "node:fs";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { ensureTestPackages } from "../helpers/deps";

export const CHROMIUM = process.env.EGRESS_CHROMIUM ?? "/usr/bin/chromium";

/** `args`: more Chromium switches (a test of the gateway's doors passes `--proxy-server`). */
export async function launchChromium(args: string[] = []): Promise<Browser> {
    if (!process.env.EGRESS_CHROMIUM) ensureTestPackages();
    if (!fs.existsSync(CHROMIUM))
        throw new Error(
            `${CHROMIUM} is missing: install Debian's \`chromium\` package (scripts/install-test-deps.sh does, as root) or set EGRESS_CHROMIUM`,
        );
    // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
    return chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: ["--no-sandbox", "--disable-dev-shm-usage", ...args],
    });
}

/**
 * The page's structure, not its pixels: landmarks, headings, and each table's caption-less column
 * headers, in document order. Compared with an expected outline so a screenshot's meaning is checked
 * while colours, fonts and numbers may change.
 */
export function outline(page: Page): Promise<string[]> {
    // Runs in the page: `any` because this project compiles without the DOM library.
    return page.evaluate(() => {
        const document = (globalThis as any).document;
        const out: string[] = [];
        const walk = (el: any) => {
            const tag = el.tagName.toLowerCase();
            const label = el.getAttribute("aria-label");
            if (tag === "header" || tag === "main") out.push(tag);
            else if (tag === "nav")
                out.push(
                    `nav ${label ?? ""}: ${[...el.querySelectorAll("a")].map((a: any) => a.textContent).join(" | ")}`,
                );
            else if (/^h[1-3]$/.test(tag))
                out.push(
                    `${tag} ${(el.textContent ?? "")
                        .replace(/\s+/g, " ")
                        .trim()
                        .replace(/op_[0-9a-f]+/, "op_…")
                        .replace(/ (queued|running|succeeded|failed)$/, "")}`,
                );
            else if (tag === "table") {
                // Rows vary with the data; the columns, and whether rows carry forms (controls), do not.
                out.push(`table: ${[...el.querySelectorAll("thead th")].map((th: any) => th.textContent).join(" | ")}`);
                if (el.querySelector("tbody form")) out.push(`form ${el.querySelector("tbody form").className}`);
                return;
            } else if (tag === "form") out.push(`form ${label ?? el.className}`);
            else if (tag === "svg" && el.getAttribute("role") === "img") return void out.push("chart");
            for (const c of el.children) walk(c);
        };
        walk(document.body);
        return out;
    });
}

export interface FirstLoad {
    page: Page;
    requests: number;
    bytes: number;
    /** From navigation start until `ready` first matched, by the page's own clock. */
    interactiveMs: number;
}

/**
 * Opens `url` in `context` (fresh, so cold) and measures the load: bytes over the wire (navigation and
 * resource `transferSize`) and time to interactive, i.e. when `ready` (the first control) first
 * appears, noted by a MutationObserver installed before the page's scripts, so the driver's round
 * trips are not counted. Only loopback is reachable: anything else the page asks for is refused.
 */
export async function firstLoad(context: BrowserContext, url: string, ready: string): Promise<FirstLoad> {
    await context.route(
        (u) => !/^http:\/\/127\.0\.0\.1[:/]/.test(u.toString()),
        (route) => route.abort(),
    );
    await context.addInitScript((sel: string) => {
        const g = globalThis as any;
        const check = () => {
            if (g.__egressReady === undefined && g.document.querySelector(sel)) g.__egressReady = g.performance.now();
        };
        new g.MutationObserver(check).observe(g.document, { childList: true, subtree: true });
    }, ready);
    const page = await context.newPage();
    await page.goto(url);
    await page.locator(ready).first().waitFor({ timeout: 30_000 });
    const m = await page.evaluate(() => {
        const g = globalThis as any;
        const entries = [
            ...g.performance.getEntriesByType("navigation"),
            ...g.performance.getEntriesByType("resource"),
        ];
        return {
            requests: entries.length,
            bytes: entries.reduce((s: number, e: any) => s + e.transferSize, 0),
            interactiveMs: Math.round(g.__egressReady),
        };
    });
    return { page, ...m };
}

/** Logs in on the dashboard's login form with `tokenValue` and waits for the pages' navigation. */
export async function login(page: Page, tokenValue: string): Promise<void> {
    await page.getByLabel("API token").fill(tokenValue);
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
}
