/**
 * A canary token, configured through EGRESS_TOKENS and therefore valid, is sent to every route in
 * every place a client might put it (a valid or malformed Authorization header, other credential
 * headers, the query, the body at any depth under token, private key, passphrase and cloud-init names, a
 * malformed body, a cookie, proxy basic auth); with debug logging on, no log line of the service carries it. The service
 * logs the token's name and scopes only. Config errors carrying a private key, a cloud-init body or a proxy password reach
 * no log line, error body, CLI output or thrown message either.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { startTestService, TestService } from "../helpers/service";
import { startService } from "../../src/service/start/server";
import { createLogger } from "../../src/log/logger";
import { PACKAGE_ROOT } from "../../src/engine/env";
import { teardown, waitFor } from "../helpers/harness";

const CANARY = "canary-env-token-0d15ea5e-4b1d";
let svc: TestService;
/** No operation of the service is queued or running. */
const idle = async () =>
    (await svc.call("GET", "/v1/operations")).body.operations.every(
        (o: { status: string }) => o.status !== "queued" && o.status !== "running",
    );
const cleanup = teardown();
before(async () => {
    const saved = process.env.EGRESS_TOKENS;
    process.env.EGRESS_TOKENS = `canary:discover+lease+scale:${CANARY}`;
    try {
        svc = await startTestService(
            {
                "egress:providers": { local: { type: "local" } },
                "egress:pools": [{ name: "web", provider: "local", replicas: 0, maxReplicas: 2 }],
            },
            { converge: false },
        );
        cleanup.own(svc);
    } finally {
        if (saved === undefined) delete process.env.EGRESS_TOKENS;
        else process.env.EGRESS_TOKENS = saved;
    }
});

const routes: [string, string, unknown?][] = [
    ["GET", "/v1/proxies"],
    ["GET", "/v1/pools"],
    ["PUT", "/v1/pools/web/replicas", { replicas: 0 }],
    ["PUT", "/v1/pools/nope/replicas", { replicas: 1 }],
    ["GET", "/v1/operations"],
    ["GET", "/v1/operations/op_none"],
    ["GET", "/v1/providers/health"],
    ["POST", "/v1/leases", {}],
    ["POST", "/v1/leases", { pool: "web" }],
    ["POST", "/v1/leases/abc/release", { outcome: "ok" }],
    ["POST", "/v1/blocks", { pool: "web", target: "example.org" }],
    ["GET", "/v1/echo"],
    ["GET", "/healthz"],
    ["GET", "/readyz"],
    ["GET", "/metrics"],
    ["GET", "/v1/openapi.json"],
    ["GET", "/nope"],
    ["GET", "/v1/proxies?lifecycle=active"],
    ["GET", "/v1/operations/op_none/events"],
    ["GET", "/v1/heal"],
    ["GET", "/v1/cluster"],
    ["GET", "/v1/whoami"],
    ["GET", "/v1/leases"],
    ["GET", "/v1/timeline"],
    ["GET", "/docs"],
    ["GET", "/docs/swagger-ui.css"],
    ["GET", "/docs/nope.js"],
];

test("the routes above cover every route the service registers", () => {
    // Read from the route modules, so a route added later without a canary run fails here.
    const dir = path.join(PACKAGE_ROOT, "src", "service", "api", "routes");
    const served = fs
        .readdirSync(dir)
        .filter((f) => f.endsWith(".ts"))
        .flatMap((f) =>
            [
                ...fs
                    .readFileSync(path.join(dir, f), "utf8")
                    .matchAll(/\br\.(get|post|put|delete|patch)\(\s*"([^"]+)"/g),
            ].map((m) => `${m[1].toUpperCase()} ${m[2]}`),
        );
    assert.ok(served.length >= 10, `found the routes (${served.join(", ")})`);
    const pattern = (route: string) => new RegExp(`^${route.replace(/:[a-z]+/gi, "[^/]+")}$`);
    const missing = served.filter((r) => {
        const [method, route] = r.split(" ");
        return !routes.some(([m, url]) => m === method && pattern(route).test(url.split("?")[0]));
    });
    assert.deepEqual(missing, [], "every route gets the canary");
});

test("the canary token is valid (so the requests below exercise the authenticated paths too)", async () => {
    const r = await svc.call("GET", "/v1/proxies", { token: CANARY });
    assert.equal(r.status, 200, JSON.stringify(r.body));
});

test("sent everywhere on every route, the canary reaches no log line", async () => {
    const ways: {
        name: string;
        token?: string | null;
        headers?: Record<string, string>;
        query?: string;
        body?: (b: unknown) => unknown;
        raw?: string;
    }[] = [
        { name: "valid bearer", token: CANARY },
        { name: "malformed authorization", token: null, headers: { authorization: `Basic ${CANARY}` } },
        { name: "bearer with junk", token: null, headers: { authorization: `Bearer ${CANARY} extra` } },
        {
            name: "other credential headers",
            token: CANARY,
            headers: {
                "x-api-key": CANARY,
                "proxy-authorization": `Bearer ${CANARY}`,
                cookie: `session=${CANARY}`,
                "x-auth-token": CANARY,
            },
        },
        { name: "query", token: null, query: `token=${CANARY}` },
        { name: "query with a valid header", token: CANARY, query: `access_token=${CANARY}` },
        {
            name: "body fields",
            token: CANARY,
            body: (b) => ({
                ...(b as object),
                token: CANARY,
                password: CANARY,
                nested: { deep: { privateKey: CANARY } },
            }),
        },
        {
            name: "secret names at any depth",
            token: CANARY,
            body: (b) => ({
                ...(b as object),
                a: [
                    {
                        b: {
                            c: [
                                {
                                    sshPrivateKey: CANARY,
                                    passphrase: CANARY,
                                    cloudInit: { inline: CANARY },
                                    userData: CANARY,
                                    api_token: CANARY,
                                },
                            ],
                        },
                    },
                ],
            }),
        },
        { name: "malformed body quoting the canary", token: CANARY, raw: `{"token": "${CANARY}"` },
        // A crawler that sends its proxy credentials (pool `auth`) to the API by mistake.
        {
            name: "proxy basic auth",
            token: CANARY,
            headers: { "proxy-authorization": `Basic ${Buffer.from(`crawler:${CANARY}`).toString("base64")}` },
        },
    ];
    let sent = 0;
    for (const [method, route, body] of routes)
        for (const w of ways) {
            if ((w.body || w.raw !== undefined) && body === undefined) continue; // GET: no body to put it in
            const url = w.query ? `${route}${route.includes("?") ? "&" : "?"}${w.query}` : route;
            const r = await svc.call(method, url, {
                token: w.token,
                headers: w.headers,
                body: w.raw !== undefined ? undefined : w.body ? w.body(body) : body,
                raw: w.raw,
            });
            assert.ok(r.status > 0);
            sent++;
        }
    assert.ok(sent > 100, `sent ${sent} requests`);
    // The accepted PUT /v1/pools/web/replicas requests queued scale operations (a preview and an `up` of
    // the inline program, in this process): they settle here, so their log lines are checked too, and no
    // engine run of theirs starts inside the broken-config window below, where its program would throw
    // the ConfigError as unhandled rejections of the Pulumi SDK (which node:test reports, against the
    // `before` hook that started the service, as activity after the test ended).
    await waitFor("the scale operations these requests queued to settle", async () => idle(), 120_000, 200);
    await new Promise((r) => setTimeout(r, 200));
    const lines = svc.logs;
    assert.ok(lines.length > 50, `requests were logged (${lines.length} lines at debug)`);
    const leaked = lines.filter((l) => l.includes(CANARY));
    assert.deepEqual(leaked, [], "no log line carries the canary");
});

test("the service logs the token's name and scopes, not the token", () => {
    const loaded = svc.logs.map((l) => JSON.parse(l)).find((l) => l.msg === "loaded API tokens");
    assert.ok(loaded, "the token list is logged at start");
    assert.deepEqual(
        loaded.tokens.find((t: any) => t.name === "canary"),
        { name: "canary", scopes: ["discover", "lease", "scale"] },
    );
});

/** The example KVM stack with a private key and a cloud-init body that break its rules. */
const PRIVATE_KEY = `-----BEGIN OPENSSH PRIVATE KEY-----\n${CANARY}-key\n-----END OPENSSH PRIVATE KEY-----`;
function badConfig(): Record<string, any> {
    const c = YAML.parse(fs.readFileSync(path.join(PACKAGE_ROOT, "stacks", "Pulumi.example-kvm.yaml"), "utf8")).config;
    const ssh = c["egress:providers"]["kvm-home"].ssh;
    ssh.privateKey = PRIVATE_KEY; // beside privateKeyPath: the whole ssh block is the offending value
    ssh.privateKeyPath ??= "~/.ssh/id_ed25519";
    c["egress:pools"][0].cloudInit = { inline: `#cloud-config\npassword: ${CANARY}-ci`, file: "cloud-init/squid.yaml" };
    // Proxy credentials breaking their rules: the password (with a newline) is never quoted.
    c["egress:pools"][0].auth = { username: "crawler:x", password: `${CANARY}-pw\n` };
    return c;
}

test(
    "config errors with a private key and a cloud-init body: not in logs, error bodies, CLI output or messages",
    { timeout: 120_000 },
    async () => {
        const good = YAML.parse(
            fs.readFileSync(path.join(svc.project.dir, "stacks", "Pulumi.svc.yaml"), "utf8"),
        ).config;
        assert.ok(await idle(), "no engine run may start while the stack file is broken");
        svc.project.writeConfig(badConfig());
        try {
            const seen: string[] = [];
            for (const [method, route, body] of routes) {
                const r = await svc.call(method, route, { token: CANARY, body });
                seen.push(
                    `${method} ${route} → ${r.status} ${typeof r.body === "string" ? r.body.slice(0, 2000) : JSON.stringify(r.body)}`,
                );
            }
            const scale = await svc.call("PUT", "/v1/pools/web/replicas", { token: CANARY, body: { replicas: 1 } });
            assert.ok(scale.status >= 400, `the broken config is refused (${scale.status})`);
            assert.match(JSON.stringify(scale.body), /ssh|cloudInit/, "the error names what is wrong");
            assert.match(JSON.stringify(scale.body), /auth\.username/, "and the bad proxy credentials, by path");
            assert.deepEqual(
                seen.filter((l) => l.includes(CANARY)),
                [],
                "no response carries it",
            );
            await new Promise((r) => setTimeout(r, 200));
            assert.deepEqual(
                svc.logs.filter((l) => l.includes(CANARY)),
                [],
                "no log line carries it",
            );

            // A start on the broken config: the thrown error and the start-up log.
            const logs: string[] = [];
            const log = createLogger({ level: "debug", destination: { write: (l: string) => void logs.push(l) } });
            const failed = await startService({
                projectRoot: svc.project.dir,
                stack: "svc",
                port: 0,
                tokensFile: path.join(svc.project.dir, "tokens.json"),
                engineEnv: svc.project.env,
                runDir: path.join(svc.project.dir, "run-2"),
                log,
                converge: false,
            }).then(
                async (s) => {
                    await s.close();
                    return undefined;
                },
                (e: Error) => e,
            );
            assert.ok(failed, "the service refuses to start on it");
            assert.match(failed.message, /invalid egress configuration/);
            assert.ok(!failed.message.includes(CANARY), failed.message);
            assert.deepEqual(
                logs.filter((l) => l.includes(CANARY)),
                [],
            );

            // The CLI, as text and as --json.
            for (const json of [[], ["--json"]]) {
                const r = cp.spawnSync(
                    process.execPath,
                    [
                        path.join(PACKAGE_ROOT, "dist", "src", "cli.js"),
                        "--cwd",
                        svc.project.dir,
                        "--stack",
                        "svc",
                        ...json,
                        "preview",
                    ],
                    { encoding: "utf8", timeout: 60_000, env: { ...process.env, ...svc.project.env } },
                );
                assert.equal(r.status, 2, r.stderr);
                assert.match(r.stdout + r.stderr, /egress:providers\.kvm-home\.ssh/);
                assert.ok(!(r.stdout + r.stderr).includes(CANARY), r.stdout + r.stderr);
            }
        } finally {
            svc.project.writeConfig(good);
        }
    },
);
