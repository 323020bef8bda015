/**
 * clients/python for real: Debian's Scrapy crawls 50-page loopback sites through a real `egress serve`
 * (local members, the gateway) with egress_client.scrapy.EgressMiddleware, via the example docs/crawling.md
 * shows; a site that blocks one member still gets every page, that member is reported (it rests for the
 * site: the lease API never hands it out for it), and the stats say so. Also the client's routes and
 * fields against the served /v1/openapi.json.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ensureTestPackages } from "../helpers/deps";
import { connectionFrom, pidListeningOn } from "../helpers/peer-process";
import { contractProblems, type PyContract } from "../helpers/python-contract";
import { printed, python, type Site, startSite } from "../helpers/python-client";
import { poolView, settledConverge, startTestService, TestService, tokenEntries } from "../helpers/service";
import { sha256 } from "../../src/service/http/auth";
import { waitFor } from "../helpers/harness";

const CRAWLER = "tok-crawler-0123456789abcdef01";
const PAGES = 50;
let svc: TestService;
let clean: Site;
let blocking: Site;
/** The member the blocking site refuses, and its process. */
let victim: { id: string; pid: number };

before(async () => {
    ensureTestPackages(); // python3-scrapy
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-scrapy-"));
    const tokensFile = path.join(dir, "tokens.json");
    const crawler = {
        name: "crawler",
        sha256: sha256(CRAWLER).toString("hex"),
        scopes: ["lease", "discover", "scale"],
    };
    fs.writeFileSync(tokensFile, JSON.stringify({ tokens: [...tokenEntries(), crawler] }));
    svc = await startTestService(
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [{ name: "web", provider: "local", replicas: 3, maxReplicas: 4 }],
        },
        { tokensFile, targetCooldownSeconds: 0, gateway: { port: 0 } },
    );
    await settledConverge(svc);
    await waitFor("3 healthy", async () => (await poolView(svc, "web"))?.healthy === 3, 30_000);
    clean = await startSite("127.0.0.2", PAGES);
    blocking = await startSite("127.0.0.3", PAGES, (req) =>
        connectionFrom(victim.pid, req.socket.remotePort!, blocking.port),
    );
});
after(async () => {
    await svc?.close();
    await clean?.close();
    await blocking?.close();
});

const crawlEnv = (extra: Record<string, string> = {}) => ({
    EGRESS_URL: svc.url,
    EGRESS_TOKEN: CRAWLER,
    EGRESS_POOL: "web",
    EGRESS_GATEWAY: `http://127.0.0.1:${svc.gatewayPort}`,
    ...extra,
});
const pagesOf = (site: Site) => new Set(site.served);
const allPages = new Set(["/", ...Array.from({ length: PAGES - 1 }, (_, i) => `/p/${i + 1}`)]);

test("the Python client's routes and fields are in /v1/openapi.json", async () => {
    const doc = (await svc.call("GET", "/v1/openapi.json", { token: null })).body;
    const c = JSON.parse(
        await python(["-c", "import json, egress_client.api as a; print(json.dumps(a.contract()))"]),
    ) as PyContract;
    assert.deepEqual(contractProblems(doc, c), []);
    // The check bites: a route and a field the service does not have are found.
    const drifted = {
        ...c,
        routes: { ...c.routes, lease: ["POST", "/v1/lease"] as [string, string] },
        requestFields: { scale: ["count"] },
    };
    assert.equal(contractProblems(doc, drifted as PyContract).length >= 2, true);
});

test(
    "a Scrapy crawl of 50 pages through the gateway, the pool raised on open and given back on close",
    { timeout: 240_000 },
    async (t) => {
        const stdout = await python(
            ["examples/scrapy_crawl.py", clean.url],
            crawlEnv({ EGRESS_SCALE_ON_OPEN: "4" }),
            200_000,
        );
        t.diagnostic(stdout);
        const out = printed(stdout);
        assert.deepEqual(pagesOf(clean), allPages);
        assert.equal(clean.served.length, PAGES, "each page fetched once");
        assert.deepEqual(
            {
                pages: out.pages,
                requests: out["egress/requests"],
                blocked: out["egress/blocked"],
                retries: out["egress/retries"],
            },
            { pages: "50", requests: "50", blocked: "0", retries: "0" },
        );
        const ops = (await svc.call("GET", "/v1/operations")).body.operations as { kind: string; desired?: any }[];
        assert.ok(ops.filter((o) => o.kind === "scale").length >= 2, "scaled up on open and back on close");
        await waitFor(
            "the pool back at 3",
            async () => {
                const p = await poolView(svc, "web");
                return p.desired === 3 && p.actual === 3;
            },
            120_000,
            500,
        );
    },
);

test(
    "a site that blocks one member: every page, the member reported, the stats say so",
    { timeout: 240_000 },
    async (t) => {
        const proxies = (await svc.call("GET", "/v1/proxies?pool=web&state=healthy")).body.proxies as {
            id: string;
            port: number;
        }[];
        const first = proxies.sort((a, b) => a.id.localeCompare(b.id))[0];
        victim = { id: first.id, pid: pidListeningOn(first.port) };
        const stdout = await python(["examples/scrapy_crawl.py", blocking.url], crawlEnv(), 200_000);
        t.diagnostic(stdout);
        const out = printed(stdout);
        assert.deepEqual(pagesOf(blocking), allPages, "every page got through another member");
        assert.ok(blocking.refused.length >= 1, "the site refused the member at least once");
        assert.equal(out.pages, "50");
        assert.equal(Number(out["egress/blocked"]), blocking.refused.length);
        assert.equal(Number(out["egress/retries"]), blocking.refused.length);
        assert.equal(Number(out["egress/requests"]), PAGES + blocking.refused.length);
        // Reported: the member rests for the site, so the lease API hands out every other member for it, never it.
        const leased: string[] = [];
        for (;;) {
            const r = await svc.call("POST", "/v1/leases", {
                token: CRAWLER,
                body: { pool: "web", target: "127.0.0.3" },
            });
            if (r.status !== 201) {
                assert.equal(r.body.error.code, "none_available");
                break;
            }
            leased.push(r.body.lease.proxy.id);
        }
        assert.deepEqual(
            leased.sort(),
            proxies
                .map((p) => p.id)
                .filter((id) => id !== victim.id)
                .sort(),
        );
        assert.ok(!svc.logs.some((l) => l.includes(CRAWLER)), "the token is never logged");
    },
);
