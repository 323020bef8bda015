/**
 * The gateway's browser doors (issue 36) with a real browser: `egress serve` on a local stack of two
 * members, Debian's chromium (playwright-core) with `--proxy-server=http://127.0.0.1:<port>` and no
 * credentials — Chrome's flag cannot carry any. Without `--gateway-allow` the browser gets 407; with
 * `--gateway-allow 127.0.0.1/32=admin` pages load; a sticky port keeps its member across pages, and two
 * sticky ports have members of their own. Only loopback is visited: a loopback origin the test starts.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as http from "node:http";
import { promisify } from "node:util";
import type { Browser } from "playwright-core";
import { launchChromium } from "./browser";
import { freePortRange, listenLoopback } from "../helpers/net";
import { endProcProject, procProject, serve, type ServeProcess, untilHealthy } from "../helpers/processes";

const p = procProject("doors", {
    "egress:providers": { local: { type: "local" } },
    // A browser loads a page's parts at once: a member that carries one request at a time (the default)
    // would move a sticky port's session to another member for each overlapping one (docs/crawling.md).
    "egress:pools": [
        { name: "web", provider: "local", replicas: 2, maxReplicas: 4, gateway: { memberConcurrency: 8 } },
    ],
});
let origin: Awaited<ReturnType<typeof listenLoopback>>;
const browsers: Browser[] = [];
const execFileP = promisify(execFile);

before(async () => {
    // The page names its path, so a test sees which of its pages it got.
    origin = await listenLoopback(
        http.createServer((req, res) => {
            res.writeHead(200, { "content-type": "text/html" });
            res.end(`<!doctype html><title>origin</title><h1>page ${new URL(req.url!, "http://x").pathname}</h1>`);
        }),
    );
});
after(async () => {
    await Promise.all(browsers.map((b) => b.close().catch(() => undefined)));
    await origin?.close();
    endProcProject(p);
});

/**
 * A browser whose pages go through `proxy`, loopback included (Chrome bypasses loopback unless told).
 * Chromium talks to Google at start (update.googleapis.com, accounts.google.com) whatever the switches:
 * Google's hosts bypass the proxy (through it they would act as the token, fail on a member, and move
 * the port's session with their retry) and resolve to nothing, so no request leaves the machine.
 */
async function browserVia(proxy: string): Promise<Browser> {
    const b = await launchChromium([
        `--proxy-server=${proxy}`,
        "--proxy-bypass-list=<-loopback>;*.googleapis.com;*.gvt1.com;*.google.com",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    ]);
    browsers.push(b);
    return b;
}

/** Opens `path` of the origin in a fresh page: the status, which member served it, and the page's heading. */
async function visit(
    b: Browser,
    path: string,
): Promise<{ status: number; member?: string; heading?: string; error?: string; challenges: string[] }> {
    const context = await b.newContext();
    const page = await context.newPage();
    // What reached the browser on the wire, 407s included (a refused page has no Playwright response).
    const challenges: string[] = [];
    const cdp = await context.newCDPSession(page);
    cdp.on("Network.responseReceivedExtraInfo", (e) => {
        if (e.statusCode === 407)
            challenges.push(String(e.headers["Proxy-Authenticate"] ?? e.headers["proxy-authenticate"]));
    });
    await cdp.send("Network.enable");
    try {
        const res = await page.goto(`${origin.url}${path}`);
        assert.ok(res, `a response for ${path}`);
        const status = res.status();
        const heading = status === 200 ? ((await page.locator("h1").textContent()) ?? undefined) : undefined;
        return { status, member: res.headers()["x-egress-proxy"], heading, challenges };
    } catch (e) {
        // Chrome without credentials to answer a proxy's 407 fails the navigation (ERR_INVALID_AUTH_CREDENTIALS).
        return { status: 0, error: (e as Error).message.split("\n")[0], challenges };
    } finally {
        await context.close();
    }
}

/** Stops a service (SIGTERM: graceful) and waits for its exit. */
async function stop(svc: ServeProcess): Promise<void> {
    svc.child.kill("SIGTERM");
    assert.equal(await svc.exited, 0, svc.logs.slice(-10).join("\n"));
}

test(
    "without --gateway-allow, a browser without credentials gets 407, on the gateway and a sticky port",
    { timeout: 240_000 },
    async () => {
        // The serve helper turns the gateway off (--gateway-port 0): this test names free ports for it.
        const gw = await freePortRange(2);
        const sticky = gw + 1;
        const svc = await serve(p, ["--gateway-port", String(gw), "--gateway-sticky-ports", `${sticky}:web`]);
        try {
            await untilHealthy(svc, 2);
            const ready = svc.entries.find((e) => e.msg === "egress service ready")!;
            assert.deepEqual(ready.gatewaySticky, [{ from: sticky, to: sticky, pool: "web" }]);
            assert.equal(ready.gateway, `http://127.0.0.1:${gw}`);
            for (const proxy of [ready.gateway as string, `http://127.0.0.1:${sticky}`]) {
                const got = await visit(await browserVia(proxy), "/closed");
                // The gateway answered 407 with its challenge; Chrome, with nothing to answer it, gives up.
                assert.ok(got.challenges.length >= 1, `${proxy}: ${JSON.stringify(got)}`);
                assert.match(got.challenges[0], /^Basic realm="egress gateway"/);
                assert.match(got.error ?? "", /net::ERR_INVALID_AUTH_CREDENTIALS/, JSON.stringify(got));
                assert.equal(got.member, undefined);
            }
        } finally {
            await stop(svc);
        }
    },
);

test(
    "with --gateway-allow 127.0.0.1/32=admin, pages load; a sticky port keeps its member, two ports have their own",
    { timeout: 240_000 },
    async () => {
        const gw = await freePortRange(4);
        const sticky = gw + 1;
        const socks = gw + 3;
        const svc = await serve(p, [
            "--gateway-port",
            String(gw),
            "--socks-port",
            String(socks),
            "--gateway-allow",
            "127.0.0.1/32=admin",
            "--gateway-sticky-ports",
            `${sticky}-${sticky + 1}:web`,
        ]);
        try {
            await untilHealthy(svc, 2);
            const gateway = svc.entries.find((e) => e.msg === "egress service ready")!.gateway as string;

            const rotating = await visit(await browserVia(gateway), "/rotating");
            assert.equal(rotating.status, 200, JSON.stringify(rotating));
            assert.equal(rotating.heading, "page /rotating");
            assert.match(rotating.member ?? "", /^web-[01]$/);

            const [a, b] = [
                await browserVia(`http://127.0.0.1:${sticky}`),
                await browserVia(`http://127.0.0.1:${sticky + 1}`),
            ];
            const a1 = await visit(a, "/a1");
            const b1 = await visit(b, "/b1");
            const a2 = await visit(a, "/a2");
            const b2 = await visit(b, "/b2");
            for (const [got, path] of [
                [a1, "/a1"],
                [b1, "/b1"],
                [a2, "/a2"],
                [b2, "/b2"],
            ] as const) {
                assert.equal(got.status, 200, `${path}: ${JSON.stringify(got)}`);
                assert.equal(got.heading, `page ${path}`);
                assert.deepEqual(got.challenges, [], "no proxy challenge");
            }
            assert.equal(a2.member, a1.member, "one sticky port, one member");
            assert.equal(b2.member, b1.member, "one sticky port, one member");
            // Two sessions on a pool of two: the second is bound to the member the first did not just use.
            assert.notEqual(a1.member, b1.member, "two sticky ports, two members");

            // SOCKS5 from an allowed source: no login offered (curl offers none without a user), none needed.
            const viaSocks = await execFileP("curl", [
                "-sS",
                "--socks5-hostname",
                `127.0.0.1:${socks}`,
                `${origin.url}/socks`,
            ]);
            assert.match(viaSocks.stdout, /page \/socks/);

            // The browser's requests were admin's (the allow rule's token) in session port-<n>: admin may report
            // a block against the member that served them (POST /v1/blocks looks up only its own requests).
            const report = { pool: "web", target: "127.0.0.1", session: `port-${sticky}`, proxy: a1.member };
            const blocked = await svc.call("POST", "/v1/blocks", { body: report });
            assert.equal(blocked.status, 200, JSON.stringify(blocked.body));
            assert.equal(blocked.body.blocked.proxy, a1.member);
        } finally {
            await stop(svc);
        }
    },
);

test("an allow rule naming a token that does not exist is a config error at start (exit 2), naming the flag", async () => {
    await assert.rejects(
        serve(p, ["--gateway-port", String(await freePortRange(1)), "--gateway-allow", "127.0.0.1/32=nobody"]),
        (e: Error) => {
            assert.match(e.message, /exited with 2/);
            assert.match(e.message, /--gateway-allow: \\?"127\.0\.0\.1\/32=nobody\\?" names token \\?"nobody\\?"/);
            return true;
        },
    );
});
