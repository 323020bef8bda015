/**
 * The TypeScript client (clients/typescript) against a real service with real local proxies: its
 * checked-in contract matches the service's document, and withProxy leases, runs a real request through
 * the proxy to a loopback origin, releases with the right outcome, and waits on 503 as Retry-After says
 * (bounded).
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { Blocked, EgressClient, EgressError } from "../../clients/typescript/src";
import { CLIENT_DIR, generatedFiles } from "../../clients/typescript/generate";
import { settledConverge, startTestService, TestService, TOKENS } from "../helpers/service";
import { leaseClock } from "../helpers/lease-clock";
import { getViaProxy, startTargetServer } from "../helpers/net";
import { sleep, teardown, waitFor } from "../helpers/harness";

// The lease rules' clock: a test moves it past a cooldown or an idle TTL of whole seconds instead of sleeping.
const clock = leaseClock();
let svc: TestService;
let origin: Awaited<ReturnType<typeof startTargetServer>>;
let egress: EgressClient;
const cleanup = teardown();
before(async () => {
    origin = await startTargetServer();
    cleanup.own(origin);
    svc = await startTestService(
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [
                {
                    name: "web",
                    provider: "local",
                    replicas: 1,
                    maxReplicas: 2,
                    cooldownSeconds: 1,
                    targets: [{ host: "busy.example", maxConcurrency: 1 }],
                },
            ],
        },
        { probeIntervalMs: 300, leaseClock: clock.now },
    );
    cleanup.own(svc);
    await settledConverge(svc);
    await waitFor(
        "1 healthy",
        async () => (await svc.call("GET", "/v1/proxies?state=healthy")).body.proxies.length === 1,
        20_000,
    );
    egress = new EgressClient({ baseUrl: svc.url, token: TOKENS.lease });
});

const releases = async (outcome: string) =>
    Number(
        new RegExp(`^egress_lease_releases_total\\{outcome="${outcome}"\\} (\\d+)$`, "m").exec(
            String((await svc.call("GET", "/metrics", { token: null })).body),
        )?.[1] ?? 0,
    );

test("the checked-in document and types are what the service's schemas generate today", async () => {
    for (const [name, text] of Object.entries(await generatedFiles()))
        assert.ok(
            fs.readFileSync(path.join(CLIENT_DIR, name), "utf8") === text,
            `clients/typescript/${name} is stale: run \`npx tsc -p tsconfig.json && node dist/clients/typescript/generate.js\``,
        );
});

test("typed calls: data on success, the error body on failure", async () => {
    const discover = new EgressClient({ baseUrl: svc.url, token: TOKENS.discover });
    const { data } = await discover.api.GET("/v1/proxies", { params: { query: { pool: "web" } } });
    assert.equal(data?.proxies.length, 1);
    const denied = await discover.api.PUT("/v1/pools/{pool}/replicas", {
        params: { path: { pool: "web" } },
        body: { replicas: 2 },
    });
    assert.equal(denied.response.status, 403);
    assert.equal(denied.error?.error.code, "forbidden");
});

test("withProxy: a real request through the leased proxy, released ok", async () => {
    const before = await releases("ok");
    let leaseId = "";
    const body = await egress.withProxy("web", "127.0.0.1", async (proxy, lease) => {
        leaseId = lease.id;
        assert.match(proxy.url, /^http:\/\/127\.0\.0\.1:\d+$/);
        const r = await getViaProxy(proxy.port, `http://127.0.0.1:${origin.port}/through-client`);
        assert.equal(r.status, 200);
        return r.body;
    });
    assert.equal(body, "hello /through-client");
    assert.equal(await releases("ok"), before + 1);
    assert.equal(
        (await svc.call("POST", `/v1/leases/${leaseId}/release`, { token: TOKENS.lease, body: { outcome: "ok" } }))
            .status,
        404,
        "released already",
    );
});

test("withProxy: Blocked releases as blocked, any other throw as error; the callback's error is rethrown", async () => {
    clock.advance(1100);
    const [blocked, errors] = [await releases("blocked"), await releases("error")];
    await assert.rejects(
        egress.withProxy(
            "web",
            undefined,
            async () => {
                throw new Blocked("captcha");
            },
            { maxWaitMs: 5000 },
        ),
        Blocked,
    );
    assert.equal(await releases("blocked"), blocked + 1);
    await assert.rejects(
        egress.withProxy(
            "web",
            undefined,
            async () => {
                throw new Error("connection reset");
            },
            { maxWaitMs: 5000 },
        ),
        /connection reset/,
    );
    assert.equal(await releases("error"), errors + 1);
});

test(
    "withProxy waits on 503 as Retry-After says, then gets the proxy; the wait is bounded",
    { timeout: 30_000 },
    async () => {
        clock.advance(1100);
        let release!: () => void;
        const holding = egress.withProxy(
            "web",
            undefined,
            () => new Promise<string>((r) => (release = () => r("first"))),
        );
        await waitFor("the first lease", async () => release !== undefined, 5000, 20);
        // Bounded: the only proxy is held; a wait shorter than Retry-After gives up with the service's error.
        await assert.rejects(
            egress.withProxy("web", undefined, async () => "never", { maxWaitMs: 200 }),
            (e: unknown) => e instanceof EgressError && e.status === 503 && e.code === "none_available",
        );
        const retries: { waitMs: number; code: string }[] = [];
        const second = egress.withProxy(
            "web",
            undefined,
            async (proxy) => (await getViaProxy(proxy.port, `http://127.0.0.1:${origin.port}/second`)).body,
            { maxWaitMs: 15_000, onRetry: (i) => retries.push(i) },
        );
        await sleep(300);
        release();
        assert.equal(await holding, "first");
        assert.equal(await second, "hello /second");
        assert.ok(
            retries.length >= 1 && retries.every((r) => r.code === "none_available" && r.waitMs >= 1000),
            JSON.stringify(retries),
        );
    },
);

test("withProxy waits on 429 target_busy (the site's politeness limit) as on a 503", { timeout: 30_000 }, async () => {
    clock.advance(1100);
    let release!: () => void;
    const holding = egress.withProxy(
        "web",
        "busy.example",
        () => new Promise<string>((r) => (release = () => r("first"))),
    );
    await waitFor("the first lease", async () => release !== undefined, 5000, 20);
    await assert.rejects(
        egress.withProxy("web", "busy.example", async () => "never", { maxWaitMs: 200 }),
        (e: unknown) => e instanceof EgressError && e.status === 429 && e.code === "target_busy",
    );
    const retries: { waitMs: number; code: string }[] = [];
    const second = egress.withProxy("web", "busy.example", async () => "second", {
        maxWaitMs: 15_000,
        onRetry: (i) => retries.push(i),
    });
    await sleep(300);
    release();
    assert.equal(await holding, "first");
    assert.equal(await second, "second");
    assert.equal(retries[0]?.code, "target_busy", JSON.stringify(retries));
});

test("withProxy with a session: the same proxy back at once, though it cools for everyone else", async () => {
    clock.advance(1100);
    const seen: { proxy: string; session?: string; rebound?: boolean }[] = [];
    for (let i = 0; i < 2; i++)
        await egress.withProxy(
            "web",
            undefined,
            async (proxy, lease) => void seen.push({ proxy: proxy.id, session: lease.session, rebound: lease.rebound }),
            { session: "cart.1", maxWaitMs: 200 },
        );
    assert.deepEqual(seen, [
        { proxy: "web-0", session: "cart.1", rebound: false },
        { proxy: "web-0", session: "cart.1", rebound: false },
    ]);
    // Without the session the proxy rests its 1 s pool cooldown: a 200 ms wait gives up.
    await assert.rejects(
        egress.withProxy("web", undefined, async () => "never", { maxWaitMs: 200 }),
        (e: unknown) => e instanceof EgressError && e.status === 503,
    );
});
