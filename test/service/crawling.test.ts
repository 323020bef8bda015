/**
 * docs/crawling.md's two crawler loops, run for real: the undici ProxyAgent loop and the curl+jq script,
 * against a real service with two local proxies and a loopback site that blocks one path. Also checks the
 * doc shows the example files verbatim, so what is documented is what was run.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { crawl } from "../../clients/typescript/examples/crawl";
import { ensureTestPackages } from "../helpers/deps";
import { settledConverge, startTestService, TestService, TOKENS } from "../helpers/service";
import { waitFor } from "../helpers/harness";
import { leaseClock } from "../helpers/lease-clock";

const root = path.resolve(__dirname, "../../..");
const examples = path.join(root, "clients/typescript/examples");
// The lease rules' clock: a test moves it past a cooldown or an idle TTL of whole seconds instead of sleeping.
const clock = leaseClock();
let svc: TestService;
/**
 * One site per loopback address 127.0.0.2–9: a proxy rests 30 s per target (host) after each release,
 * so a crawl of one host with two proxies would mostly wait; real crawls spread over many hosts too.
 */
const sites: http.Server[] = [];
const hits: string[] = [];
let sitePort = 0;
const url = (i: number, p: string) => `http://127.0.0.${i}:${sitePort}${p}`;

before(async () => {
    for (let i = 2; i <= 9; i++) {
        const server = http.createServer((req, res) => {
            hits.push(`${req.headers.host}${req.url}`);
            res.writeHead(req.url === "/blocked" ? 403 : 200, { "content-type": "text/plain" });
            res.end(`page ${req.url}`);
        });
        // The same port on every address (the first one picks it), so the URLs differ by host only.
        await new Promise<void>((ok, fail) => server.once("error", fail).listen(sitePort, `127.0.0.${i}`, ok));
        sitePort = (server.address() as { port: number }).port;
        sites.push(server);
    }
    svc = await startTestService(
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [{ name: "web", provider: "local", replicas: 2, maxReplicas: 2, cooldownSeconds: 1 }],
        },
        { probeIntervalMs: 300, leaseClock: clock.now },
    );
    await settledConverge(svc);
    await waitFor(
        "2 healthy",
        async () => (await svc.call("GET", "/v1/proxies?state=healthy")).body.proxies.length === 2,
        20_000,
    );
});
after(async () => {
    await svc?.close();
    for (const s of sites) {
        s.closeAllConnections();
        await new Promise((r) => s.close(r));
    }
});

const releases = async () => {
    const text = String((await svc.call("GET", "/metrics", { token: null })).body);
    const n = (o: string) =>
        Number(new RegExp(`^egress_lease_releases_total\\{outcome="${o}"\\} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
    return { ok: n("ok"), blocked: n("blocked"), error: n("error") };
};

test("docs/crawling.md shows the example files as they are", () => {
    const doc = fs.readFileSync(path.join(root, "docs/crawling.md"), "utf8");
    for (const f of ["crawl.ts", "crawl.sh"])
        assert.ok(doc.includes(fs.readFileSync(path.join(examples, f), "utf8")), `docs/crawling.md has ${f} verbatim`);
});

test(
    "the undici ProxyAgent loop: pages through leased proxies, blocked and ok releases",
    { timeout: 60_000 },
    async () => {
        const before = await releases();
        const urls = [url(2, "/a"), url(3, "/b"), url(4, "/blocked"), url(5, "/c")];
        const pages = await crawl(urls, { baseUrl: svc.url, token: TOKENS.lease, pool: "web" });
        assert.deepEqual(
            pages.map((p) => p.status),
            [200, 200, "blocked", 200],
        );
        assert.ok(
            pages.every((p) => /^http:\/\/127\.0\.0\.1:\d+$/.test(p.proxy ?? "")),
            JSON.stringify(pages),
        );
        assert.equal(pages[0].bytes, "page /a".length);
        const now = await releases();
        assert.deepEqual(
            { ok: now.ok - before.ok, blocked: now.blocked - before.blocked, error: now.error - before.error },
            { ok: 3, blocked: 1, error: 0 },
        );
        for (const u of urls) assert.ok(hits.includes(u.replace("http://", "")), `the site saw ${u}`);
    },
);

test("the curl + jq script: the same loop, releases with the outcome", { timeout: 60_000 }, async () => {
    ensureTestPackages(); // curl, jq
    clock.advance(1100);
    const before = await releases();
    const urls = [url(6, "/d"), url(7, "/blocked"), url(8, "/e"), url(9, "/f")];
    const env: Record<string, string> = {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        EGRESS_URL: svc.url,
        EGRESS_TOKEN: TOKENS.lease,
        EGRESS_POOL: "web",
    };
    const { stdout } = await promisify(execFile)(path.join(examples, "crawl.sh"), urls, { env, timeout: 50_000 });
    const lines = stdout.trim().split("\n");
    assert.equal(lines.length, 4, stdout);
    assert.match(
        lines[0],
        new RegExp(`^200 ${urls[0].replace(/\./g, "\\.")} via http://127\\.0\\.0\\.1:\\d+ \\(ok\\)$`),
    );
    assert.match(lines[1], /^403 .*\/blocked via .* \(blocked\)$/);
    assert.match(lines[3], /^200 .*\/f via .* \(ok\)$/);
    const now = await releases();
    assert.deepEqual({ ok: now.ok - before.ok, blocked: now.blocked - before.blocked }, { ok: 3, blocked: 1 });
});
