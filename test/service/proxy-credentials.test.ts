/**
 * Proxy credentials end to end, on the real local stack: a pool with `auth` (the password a Pulumi
 * secret, set with `pulumi config set --secret`) gets proxies that answer 407 without the credentials;
 * the service's health probes authenticate; a lease hands out a URL carrying them; discovery shows them
 * to `lease`/`admin` tokens only; and the clear password is in no log line, no answer to a discover-only
 * token, and no file of the state backend, the stack file or the proxies' run dir.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { startTestService, TestService, TOKENS } from "../helpers/service";
import { proxyBasicAuth, requestViaProxy, startTargetServer } from "../helpers/net";
import { engineHome, PACKAGE_ROOT } from "../../src/engine";
import { settled, teardown, waitFor } from "../helpers/harness";

const PASSWORD = "creds-canary-7f3a9c1e-Qx2";
const USERNAME = "crawler";
let svc: TestService;
let target: Awaited<ReturnType<typeof startTargetServer>>;

/** Runs the Pulumi CLI in the test project (the way a user sets a secret). */
function pulumi(args: string[]): string {
    const home = engineHome();
    return cp.execFileSync(path.join(home.binDir, "pulumi"), [...args, "--non-interactive"], {
        cwd: svc.project.dir,
        env: {
            PATH: process.env.PATH ?? "/usr/bin:/bin",
            HOME: process.env.HOME ?? "/tmp",
            PULUMI_HOME: home.pulumiHome,
            PULUMI_SKIP_UPDATE_CHECK: "true",
            ...svc.project.env,
        },
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
    });
}

const cleanup = teardown();
before(async () => {
    target = await startTargetServer();
    cleanup.own(target);
    svc = await startTestService(
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [{ name: "web", provider: "local", replicas: 0, maxReplicas: 2 }],
        },
        { probeIntervalMs: 300, converge: false, targetCooldownSeconds: 0, gateway: { port: 0 } },
    );
    cleanup.own(svc);
    pulumi(["stack", "select", "svc", "--create"]);
    pulumi(["config", "set", "--path", "egress:pools[0].auth.username", USERNAME, "--stack", "svc"]);
    pulumi(["config", "set", "--secret", "--path", "egress:pools[0].auth.password", PASSWORD, "--stack", "svc"]);
    const stackText = fs.readFileSync(path.join(svc.project.dir, "stacks", "Pulumi.svc.yaml"), "utf8");
    assert.ok(
        !stackText.includes(PASSWORD) && /secure:/.test(stackText),
        `the password is a secret in the stack file:\n${stackText}`,
    );
    const scale = await svc.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 2 } });
    assert.equal(scale.status, 202, JSON.stringify(scale.body));
    const op = await settled(svc, scale.body.operation.id);
    assert.equal(op.status, "succeeded", JSON.stringify(op));
});

test("health probes authenticate: the members turn healthy", async () => {
    await waitFor(
        "2 healthy",
        async () => (await svc.call("GET", "/v1/proxies?state=healthy")).body.proxies.length === 2,
        20_000,
    );
});

test("a discover-only token sees `auth: true` and a bare URL; a token that may lease gets the URL with credentials", async () => {
    const discover = await svc.call("GET", "/v1/proxies", { token: TOKENS.discover });
    assert.equal(discover.status, 200);
    assert.ok(!JSON.stringify(discover.body).includes(PASSWORD), "no password for a discover-only token");
    for (const p of discover.body.proxies) {
        assert.equal(p.auth, true);
        assert.equal(p.url, `http://127.0.0.1:${p.port}`);
    }
    // Discovery needs `discover`; a token that also may lease (here: admin) gets the URL to use.
    const admin = await svc.call("GET", "/v1/proxies", { token: TOKENS.admin });
    assert.equal(admin.body.proxies.length, 2);
    for (const p of admin.body.proxies)
        assert.equal(p.url, `http://${USERNAME}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${p.port}`);
});

test("the proxies require the credentials; a lease's URL carries them and works as is", async () => {
    const r = await svc.call("POST", "/v1/leases", { token: TOKENS.lease, body: { pool: "web" } });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const proxy = r.body.lease.proxy;
    assert.equal(proxy.auth, true);
    const u = new URL(proxy.url);
    assert.deepEqual(
        [decodeURIComponent(u.username), decodeURIComponent(u.password), u.hostname, Number(u.port)],
        [USERNAME, PASSWORD, "127.0.0.1", proxy.port],
    );
    const origin = `http://127.0.0.1:${target.port}/with-creds`;
    assert.equal((await requestViaProxy(proxy.port, origin)).status, 407, "no credentials → 407");
    const ok = await requestViaProxy(
        proxy.port,
        origin,
        proxyBasicAuth(decodeURIComponent(u.username), decodeURIComponent(u.password)),
    );
    assert.deepEqual([ok.status, ok.body], [200, "hello /with-creds"]);
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

test("the rotating gateway chains through members that require credentials (the crawler never sees them)", async () => {
    const origin = `http://127.0.0.1:${target.port}/via-gateway`;
    const served = new Set<string>();
    for (let i = 0; i < 4; i++) {
        const r = await requestViaProxy(svc.gatewayPort!, origin, proxyBasicAuth("web", TOKENS.lease));
        assert.deepEqual([r.status, r.body], [200, "hello /via-gateway"], JSON.stringify(r.headers));
        served.add(String(r.headers["x-egress-proxy"]));
    }
    assert.deepEqual([...served].sort(), ["web-0", "web-1"], "both authenticated members served through the gateway");
    const wrong = await requestViaProxy(svc.gatewayPort!, origin, proxyBasicAuth(USERNAME, PASSWORD));
    assert.equal(wrong.status, 407, "the members' own credentials are no gateway token");
    assert.ok(!wrong.body.includes(PASSWORD));
});

test(
    "docs/crawling.md's loops work unchanged against a pool with auth, and print no password",
    { timeout: 90_000 },
    async () => {
        const { crawl } = await import("../../clients/typescript/examples/crawl");
        const site = `http://127.0.0.1:${target.port}`;
        const pages = await crawl([`${site}/ts`], { baseUrl: svc.url, token: TOKENS.lease, pool: "web" });
        assert.deepEqual(
            pages.map((p) => p.status),
            [200],
            JSON.stringify(pages),
        );
        assert.match(pages[0].proxy ?? "", /^http:\/\/127\.0\.0\.1:\d+$/, "shown without the credentials");
        // Another target: the proxies rest 30 s per target after a release.
        const env = {
            PATH: process.env.PATH ?? "/usr/bin:/bin",
            EGRESS_URL: svc.url,
            EGRESS_TOKEN: TOKENS.lease,
            EGRESS_POOL: "web",
        };
        // Async: the service runs in this process, so a blocking spawn would starve it.
        const r = await promisify(cp.execFile)(
            path.join(PACKAGE_ROOT, "clients/typescript/examples/crawl.sh"),
            [`http://localhost:${target.port}/sh`],
            { env, encoding: "utf8", timeout: 60_000 },
        );
        assert.match(r.stdout, /^200 http:\/\/localhost:\d+\/sh via http:\/\/127\.0\.0\.1:\d+ \(ok\)\n$/);
        assert.ok(!(r.stdout + r.stderr).includes(PASSWORD));
    },
);

test("the clear password is in no log line and no file of the state backend, stack file or run dir", async () => {
    const logs = svc.logs.join("");
    assert.ok(logs.length > 0);
    assert.ok(!logs.includes(PASSWORD) && !logs.includes(encodeURIComponent(PASSWORD)), "not in the service's logs");
    const leaks: string[] = [];
    const walk = (dir: string) => {
        for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
            const p = path.join(dir, e.name);
            if (e.isDirectory()) walk(p);
            else if (e.isFile() && fs.readFileSync(p).includes(PASSWORD)) leaks.push(p);
        }
    };
    let files = 0;
    for (const dir of ["backend", "stacks", "run"].map((d) => path.join(svc.project.dir, d))) {
        assert.ok(fs.existsSync(dir), `${dir} exists`);
        walk(dir);
        files += fs.readdirSync(dir, { recursive: true }).length;
    }
    assert.ok(files > 3, "the walk saw the checkpoint and the proxies' files");
    assert.deepEqual(leaks, [], "no file holds the clear password");
    const checkpoint = fs.readFileSync(
        path.join(svc.project.dir, "backend", ".pulumi", "stacks", "egress", "svc.json"),
        "utf8",
    );
    assert.match(checkpoint, /"credentials"/, "the stack output exists (as a secret)");
});

test("`egress outputs` marks the proxies `auth` and prints no password; `--show-secrets` prints the credentials", async () => {
    const cli = (...args: string[]) => {
        const r = cp.spawnSync(
            process.execPath,
            [path.join(PACKAGE_ROOT, "dist", "src", "cli.js"), "--cwd", svc.project.dir, "--stack", "svc", ...args],
            { encoding: "utf8", timeout: 60_000, env: { ...process.env, ...svc.project.env } },
        );
        assert.equal(r.status, 0, r.stderr);
        return r.stdout;
    };
    const plain = cli("--json", "outputs");
    assert.ok(!plain.includes(PASSWORD));
    assert.deepEqual(
        JSON.parse(plain).proxies.map((p: any) => p.auth),
        [true, true],
    );
    assert.deepEqual(JSON.parse(cli("--json", "outputs", "--show-secrets")).credentials, {
        web: { username: USERNAME, password: PASSWORD },
    });
    const text = cli("outputs");
    assert.match(text, /--show-secrets/);
    assert.ok(!text.includes(PASSWORD));
    assert.match(cli("outputs", "--show-secrets"), new RegExp(`^web\\s+${USERNAME}\\s+${PASSWORD}$`, "m"));
});
