/**
 * Kind `static` on the real engine and service: three proxy-chain proxies on loopback, listed by URL.
 * `up` publishes them in the stack output `proxies`, they turn healthy through real probes and are leased,
 * scaling is refused, and a stopped proxy turns unhealthy (provider check and member probe).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Server } from "proxy-chain";
import { proxyBasicAuth, requestViaProxy, startTargetServer } from "../helpers/net";
import { settledConverge, startTestService, TestService, TOKENS } from "../helpers/service";
import { waitFor } from "../helpers/harness";

const PASSWORD = "static-proxy-password-canary";
let proxies: Server[];
let target: Awaited<ReturnType<typeof startTargetServer>>;
let svc: TestService;

before(async () => {
    target = await startTargetServer();
    proxies = [];
    for (let i = 0; i < 3; i++) {
        // proxies[1] requires its credentials (407 without), as a bought proxy does.
        const prepareRequestFunction =
            i !== 1
                ? undefined
                : ({ username, password }: { username?: string; password?: string }) => ({
                      requestAuthentication: username !== "crawler" || password !== PASSWORD,
                  });
        const s = new Server({ host: "127.0.0.1", port: 0, verbose: false, prepareRequestFunction });
        await s.listen();
        proxies.push(s);
    }
    svc = await startTestService({
        "egress:providers": {
            byo: {
                type: "static",
                proxies: [
                    `http://127.0.0.1:${proxies[0].port}`,
                    // Credentials as fields: the service uses them (probes, lease URLs); they are never published.
                    {
                        url: `http://127.0.0.1:${proxies[1].port}`,
                        username: "crawler",
                        password: PASSWORD,
                        zone: "rack-2",
                    },
                    `http://127.0.0.1:${proxies[2].port}`,
                ],
            },
        },
        "egress:pools": [{ name: "byo", provider: "byo", replicas: 3 }],
    });
    await settledConverge(svc);
});
after(async () => {
    await svc?.close();
    for (const s of proxies ?? []) await s.close(true).catch(() => undefined);
    await target?.close();
});

test("up: the stack output `proxies` lists the listed proxies, without credentials", { timeout: 60_000 }, async () => {
    const out = await svc.project.driver.proxies();
    assert.deepEqual(
        out.map((p) => ({ id: p.id, kind: p.kind, host: p.host, port: p.port, url: p.url, zone: p.zone })),
        proxies.map((s, i) => ({
            id: `byo-${i}`,
            kind: "static",
            host: "127.0.0.1",
            port: s.port,
            url: `http://127.0.0.1:${s.port}`,
            zone: i === 1 ? "rack-2" : "static",
        })),
    );
    assert.ok(!JSON.stringify(out).includes(PASSWORD), "no credentials in the stack output");
});

test("they turn healthy and are leased like any pool's members", { timeout: 60_000 }, async () => {
    const healthy = await waitFor(
        "3 healthy static proxies",
        async () => {
            const p = await svc.call("GET", "/v1/proxies?state=healthy", { token: TOKENS.discover });
            return p.body.proxies?.length === 3 ? p.body.proxies : undefined;
        },
        30_000,
    );
    assert.ok(!JSON.stringify(healthy).includes(PASSWORD));
    const pools = await svc.call("GET", "/v1/pools", { token: TOKENS.discover });
    assert.deepEqual(pools.body.pools, [
        {
            name: "byo",
            provider: "byo",
            desired: 3,
            maxReplicas: 100,
            actual: 3,
            healthy: 3,
            leased: 0,
            draining: 0,
            scalable: false,
        },
    ]);
    const r = await svc.call("POST", "/v1/leases", { token: TOKENS.lease, body: { pool: "byo", ttlSeconds: 30 } });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    // The lease's URL is all a crawler needs, credentials included when the listed proxy has them.
    const u = new URL(r.body.lease.proxy.url);
    const auth = u.username ? proxyBasicAuth(decodeURIComponent(u.username), decodeURIComponent(u.password)) : {};
    const via = await requestViaProxy(Number(u.port), `http://127.0.0.1:${target.port}/static`, auth);
    assert.deepEqual([via.status, via.body], [200, "hello /static"]);
    assert.equal(
        (
            await svc.call("POST", `/v1/leases/${r.body.lease.id}/release`, {
                token: TOKENS.lease,
                body: { outcome: "ok" },
            })
        ).status,
        200,
    );
});

test(
    "a listed proxy's own credentials: probes and lease URLs carry them, discover-only tokens never see them",
    { timeout: 60_000 },
    async () => {
        const seen = await svc.call("GET", "/v1/proxies", { token: TOKENS.discover });
        assert.equal(seen.status, 200, JSON.stringify(seen.body));
        const bare = seen.body.proxies.find((p: any) => p.id === "byo-1");
        assert.deepEqual(
            [bare.auth, bare.url, bare.health],
            [true, `http://127.0.0.1:${proxies[1].port}`, "healthy"],
            "marked auth, healthy through authenticated probes",
        );
        assert.ok(!JSON.stringify(seen.body).includes(PASSWORD));
        const full = await svc.call("GET", "/v1/proxies", { token: TOKENS.admin });
        const url = new URL(full.body.proxies.find((p: any) => p.id === "byo-1").url);
        assert.deepEqual([decodeURIComponent(url.username), decodeURIComponent(url.password)], ["crawler", PASSWORD]);
        assert.equal(
            full.body.proxies.find((p: any) => p.id === "byo-0").url,
            `http://127.0.0.1:${proxies[0].port}`,
            "a proxy without credentials keeps a bare URL",
        );
        const origin = `http://127.0.0.1:${target.port}/own-creds`;
        assert.equal(
            (await requestViaProxy(proxies[1].port, origin)).status,
            407,
            "the listed proxy really requires them",
        );
        const ok = await requestViaProxy(
            proxies[1].port,
            origin,
            proxyBasicAuth(decodeURIComponent(url.username), decodeURIComponent(url.password)),
        );
        assert.deepEqual([ok.status, ok.body], [200, "hello /own-creds"]);
    },
);

test("scale is refused: the members follow the list", async () => {
    const r = await svc.call("PUT", "/v1/pools/byo/replicas", { token: TOKENS.scale, body: { replicas: 5 } });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.error.code, "not_scalable");
    assert.match(
        r.body.error.message,
        /pool "byo" cannot be scaled: its 3 member\(s\) follow provider "byo" \(kind `static`\); change that entry instead/,
    );
});

test(
    "a stopped proxy: its provider check fails and its member turns unhealthy; the others stay",
    { timeout: 60_000 },
    async () => {
        const health = await svc.call("GET", "/v1/providers/health", { token: TOKENS.discover });
        const byo = health.body.providers.find((p: any) => p.provider === "byo");
        assert.equal(byo.kind, "static");
        assert.deepEqual(
            byo.targets.map((t: any) => [t.target, t.ok]),
            proxies.map((s) => [`127.0.0.1:${s.port}`, true]),
        );
        await proxies[2].close(true);
        const unhealthy = await waitFor(
            "byo-2 unhealthy",
            async () => {
                const p = await svc.call("GET", "/v1/proxies?state=unhealthy", { token: TOKENS.discover });
                return p.body.proxies?.length === 1 ? p.body.proxies : undefined;
            },
            30_000,
        );
        assert.equal(unhealthy[0].id, "byo-2");
        const down = await waitFor(
            "the provider check sees it",
            async () => {
                const h = await svc.call("GET", "/v1/providers/health", { token: TOKENS.discover });
                const p = h.body.providers.find((x: any) => x.provider === "byo");
                return p.ok === false ? p : undefined;
            },
            30_000,
        );
        assert.deepEqual(
            down.targets.map((t: any) => [t.target, t.ok, t.stage]),
            proxies.map((s, i) => [`127.0.0.1:${s.port}`, i !== 2, i === 2 ? "tcp" : undefined]),
        );
        const healthy = await svc.call("GET", "/v1/proxies?state=healthy", { token: TOKENS.discover });
        assert.deepEqual(healthy.body.proxies.map((p: any) => p.id).sort(), ["byo-0", "byo-1"]);
        assert.ok(!svc.logs.join("\n").includes(PASSWORD), "the password never reaches the service log");
    },
);
