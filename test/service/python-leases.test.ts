/**
 * clients/python's lease client against a real `egress serve` (two local members): docs/crawling.md's
 * requests example (sync `with client.lease(...)`, a page blocked and released so) and the asyncio
 * example (ok / blocked / error releases, and a lease that waits on 503 + Retry-After until a member
 * is free).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { ensureTestPackages } from "../helpers/deps";
import * as fs from "node:fs";
import * as path from "node:path";
import { PY_CLIENT, python, type Site, startSite } from "../helpers/python-client";
import { PACKAGE_ROOT } from "../../src/engine/env";
import { poolView, settledConverge, startTestService, TestService, TOKENS } from "../helpers/service";
import { waitFor } from "../helpers/harness";

let svc: TestService;
let site: Site;

before(async () => {
    ensureTestPackages(); // python3-requests
    svc = await startTestService(
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [{ name: "web", provider: "local", replicas: 2, maxReplicas: 2, cooldownSeconds: 0 }],
        },
        { targetCooldownSeconds: 0 },
    );
    await settledConverge(svc);
    await waitFor("2 healthy", async () => (await poolView(svc, "web"))?.healthy === 2, 30_000);
    site = await startSite("127.0.0.4", 3, (req) => req.url === "/blocked");
});
after(async () => {
    await svc?.close();
    await site?.close();
});

const env = () => ({ EGRESS_URL: svc.url, EGRESS_TOKEN: TOKENS.lease, EGRESS_POOL: "web" });
const releases = async () => {
    const text = String((await svc.call("GET", "/metrics", { token: null })).body);
    const n = (o: string) =>
        Number(new RegExp(`^egress_lease_releases_total\\{outcome="${o}"\\} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
    return { ok: n("ok"), blocked: n("blocked"), error: n("error") };
};
const delta = (a: Record<string, number>, b: Record<string, number>) =>
    Object.fromEntries(Object.keys(b).map((k) => [k, b[k] - a[k]]));

test("the requests example: a lease per page, the blocked page released blocked", { timeout: 60_000 }, async (t) => {
    const before = await releases();
    const urls = [`${site.url}p/1`, `${site.url}blocked`, `${site.url}p/2`];
    const stdout = await python(["examples/requests_crawl.py", ...urls], env());
    t.diagnostic(stdout);
    const lines = stdout.trim().split("\n");
    assert.equal(lines.length, 3, lines.join("\n"));
    assert.match(lines[0], new RegExp(`^200 ${urls[0]} via web-\\d \\(ok\\)$`));
    assert.match(lines[1], new RegExp(`^403 ${urls[1]} via web-\\d \\(blocked\\)$`));
    assert.match(lines[2], /^200 .* \(ok\)$/);
    assert.deepEqual(delta(before, await releases()), { ok: 2, blocked: 1, error: 0 });
    assert.deepEqual(site.served, ["/p/1", "/p/2"]);
});

test(
    "the asyncio example: ok, blocked and error releases; a lease waits for a free member",
    { timeout: 60_000 },
    async (t) => {
        // Both members held: the example's first lease is answered 503 with Retry-After until one comes back.
        const held = [];
        for (let i = 0; i < 2; i++)
            held.push(
                (await svc.call("POST", "/v1/leases", { token: TOKENS.lease, body: { pool: "web" } })).body.lease.id,
            );
        const before = await releases();
        const run = python(["examples/async_leases.py"], env());
        await new Promise((r) => setTimeout(r, 2500));
        for (const id of held)
            await svc.call("POST", `/v1/leases/${id}/release`, { token: TOKENS.lease, body: { outcome: "ok" } });
        const stdout = await run;
        t.diagnostic(stdout);
        const lines = stdout.trim().split("\n");
        assert.match(lines[0], /^ok via web-\d after [2-9]s$/, "it waited for a member");
        assert.match(lines[1], /^blocked via web-\d$/);
        assert.match(lines[2], /^error via web-\d$/);
        assert.deepEqual(delta(before, await releases()), { ok: 3, blocked: 1, error: 1 }); // 2 of the 3 ok are ours
        assert.ok(!svc.logs.some((l) => l.includes(TOKENS.lease)), "the token is never logged");
    },
);

test("docs/crawling.md shows the Python examples as they are", () => {
    const doc = fs.readFileSync(path.join(PACKAGE_ROOT, "docs", "crawling.md"), "utf8");
    for (const f of ["requests_crawl.py", "scrapy_crawl.py"])
        assert.ok(doc.includes(fs.readFileSync(path.join(PY_CLIENT, "examples", f), "utf8")), `${f} verbatim`);
});
